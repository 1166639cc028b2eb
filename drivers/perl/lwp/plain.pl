#!/usr/bin/perl
# LWP::UserAgent's plain loop (docs/driver-protocol.md §9): one user agent, $ua->get in a loop,
# the body as $res->content (the bytes, as the driver reads them). keep-alive: keep_alive => 1,
# LWP's documented switch for its connection cache (without it LWP closes after every request,
# which is close).
# usage: plain.pl URL COUNT keep-alive|close WARMUP_S

use strict;
use warnings;
use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC);
use LWP::UserAgent ();

my ($url, $count, $mode, $warmup) = @ARGV;
if (@ARGV != 4 || $count !~ /^\d+$/ || $mode !~ /^(?:keep-alive|close)$/ || $warmup !~ /^\d+(?:\.\d*)?$/) {
    print STDERR "usage: plain.pl URL COUNT keep-alive|close WARMUP_S\n";
    exit 1;
}

my $ua = LWP::UserAgent->new($mode eq 'keep-alive' ? (keep_alive => 1) : ());

# one GET; the body's length
sub get {
    my $res = $ua->get($url);
    die "GET $url: " . $res->status_line . "\n" if $res->code != 200;
    return length $res->content;
}

my ($bytes, $seconds);
eval {
    my $until = clock_gettime(CLOCK_MONOTONIC) + $warmup;
    get() while clock_gettime(CLOCK_MONOTONIC) < $until;
    $bytes = 0;
    my $t0 = clock_gettime(CLOCK_MONOTONIC);
    $bytes += get() for 1 .. $count;
    $seconds = clock_gettime(CLOCK_MONOTONIC) - $t0;
    1;
} or do {
    print STDERR $@;
    exit 1;
};
printf qq({"requests": %d, "bytes": %d, "seconds": %.6f}\n), $count, $bytes, $seconds;
