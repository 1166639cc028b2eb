#!/usr/bin/perl
# WWW::Curl::Easy's plain loop (docs/driver-protocol.md §9): one easy handle as the module's
# synopsis builds it, perform() again and again into a scalar. close: FORBID_REUSE and
# FRESH_CONNECT, libcurl's own way to a new connection per transfer (as the driver does).
# usage: plain.pl URL COUNT keep-alive|close WARMUP_S

use strict;
use warnings;
use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC);
use WWW::Curl::Easy;

my ($url, $count, $mode, $warmup) = @ARGV;
if (@ARGV != 4 || $count !~ /^\d+$/ || $mode !~ /^(?:keep-alive|close)$/ || $warmup !~ /^\d+(?:\.\d*)?$/) {
    print STDERR "usage: plain.pl URL COUNT keep-alive|close WARMUP_S\n";
    exit 1;
}

my $curl = WWW::Curl::Easy->new;
$curl->setopt(CURLOPT_URL, $url);
if ($mode eq 'close') {
    $curl->setopt(CURLOPT_FORBID_REUSE, 1);
    $curl->setopt(CURLOPT_FRESH_CONNECT, 1);
}

# one GET; the body's length
sub get {
    my $body = '';
    $curl->setopt(CURLOPT_WRITEDATA, \$body);
    my $rc = $curl->perform;
    die "GET $url: " . $curl->strerror($rc) . ' ' . $curl->errbuf . "\n" if $rc;
    my $status = $curl->getinfo(CURLINFO_HTTP_CODE);
    die "GET $url: status $status\n" if $status != 200;
    return length $body;
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
