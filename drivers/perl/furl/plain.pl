#!/usr/bin/perl
# Furl's plain loop (docs/driver-protocol.md §9): one Furl object, $furl->get in a loop, the body
# as $res->content. Furl keeps its last connection (keep-alive); close: a Connection: close
# header on every request, which makes Furl drop the connection (as the driver does).
# usage: plain.pl URL COUNT keep-alive|close WARMUP_S

use strict;
use warnings;
use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC);
use Furl ();

my ($url, $count, $mode, $warmup) = @ARGV;
if (@ARGV != 4 || $count !~ /^\d+$/ || $mode !~ /^(?:keep-alive|close)$/ || $warmup !~ /^\d+(?:\.\d*)?$/) {
    print STDERR "usage: plain.pl URL COUNT keep-alive|close WARMUP_S\n";
    exit 1;
}

my $furl = Furl->new($mode eq 'close' ? (headers => [Connection => 'close']) : ());

# one GET; the body's length
sub get {
    my $res = $furl->get($url);
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
