#!/usr/bin/perl
# HTTP::Tiny's plain loop (docs/driver-protocol.md §9): one HTTP::Tiny object (keep_alive on by
# default), $http->get in a loop, the body as $res->{content}. close: keep_alive => 0.
# usage: plain.pl URL COUNT keep-alive|close WARMUP_S

use strict;
use warnings;
use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC);
use HTTP::Tiny ();

my ($url, $count, $mode, $warmup) = @ARGV;
if (@ARGV != 4 || $count !~ /^\d+$/ || $mode !~ /^(?:keep-alive|close)$/ || $warmup !~ /^\d+(?:\.\d*)?$/) {
    print STDERR "usage: plain.pl URL COUNT keep-alive|close WARMUP_S\n";
    exit 1;
}

my $http = HTTP::Tiny->new($mode eq 'close' ? (keep_alive => 0) : ());

# one GET; the body's length
sub get {
    my $res = $http->get($url);
    die "GET $url: $res->{status} $res->{reason}" . ($res->{status} == 599 ? ": $res->{content}" : "\n")
        if $res->{status} != 200;
    return length $res->{content};
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
