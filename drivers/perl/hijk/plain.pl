#!/usr/bin/perl
# Hijk's plain loop (docs/driver-protocol.md §9): Hijk::request with host, port and path, as its
# synopsis calls it; the body as $res->{body}. keep-alive: Hijk's default socket cache (one
# socket per host and port, reused); close: no socket cache and a Connection: close header
# (as the driver does).
# usage: plain.pl URL COUNT keep-alive|close WARMUP_S

use strict;
use warnings;
use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC);
use Hijk ();

my ($url, $count, $mode, $warmup) = @ARGV;
if (@ARGV != 4 || $count !~ /^\d+$/ || $mode !~ /^(?:keep-alive|close)$/ || $warmup !~ /^\d+(?:\.\d*)?$/) {
    print STDERR "usage: plain.pl URL COUNT keep-alive|close WARMUP_S\n";
    exit 1;
}

my ($host, $port, $path) = $url =~ m{^http://([^/:]+):(\d+)(/.*)$}
    or do { print STDERR "plain.pl: cannot split URL $url\n"; exit 1 };
my %args = (host => $host, port => $port, path => $path,
    $mode eq 'close' ? (socket_cache => undef, head => [Connection => 'close']) : ());

# one GET; the body's length
sub get {
    my $res = Hijk::request(\%args);
    die "GET $url: Hijk error $res->{error}" . ($res->{error_message} ? ": $res->{error_message}" : '') . "\n"
        if $res->{error};
    die "GET $url: status $res->{status}\n" if $res->{status} != 200;
    return length $res->{body};
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
