#!/usr/bin/perl
# perl-hijk: Hijk::request, the low-level HTTP/1.1 client, requests one after another. The job
# owns Hijk's socket cache (one socket per host and port, reused); keep-alive off passes no
# cache and sends "Connection: close". Hijk takes the whole request body as a string: forms
# are built here (urlencoded, multipart), an upload's file is read into memory.

use strict;
use warnings;
use FindBin ();
use lib "$FindBin::Bin/../_lib";

use LabDriver ();
use Hijk ();
use JSON::PP ();
use Socket qw(IPPROTO_TCP TCP_NODELAY);

# Hijk's error bits (Hijk::Error::*), for the report
my @ERRORS = ([1, 'connect timeout'], [2, 'read timeout'], [4, 'cannot resolve'], [8, 'select error'],
    [16, 'write error'], [32, 'read error'], [64, 'bad read']);

sub error_text {
    my ($res) = @_;
    my @names = map { $_->[1] } grep { $res->{error} & $_->[0] } @ERRORS;
    return join(', ', @names ? @names : "error $res->{error}")
        . ($res->{error_message} ? ": $res->{error_message}" : '')
        . ($res->{errno_string} ? " ($res->{errno_string})" : '');
}

sub prepare {
    my ($job) = @_;
    for my $req (@{$job->{requests}}) {
        return (undef, 'Hijk speaks plain http only') unless $req->{url} =~ m{^http://};
    }
    return {cache => $job->{keep_alive} ? {} : undef, nodelay => LabDriver::option($job, 'tcp_nodelay')};
}

sub slurp {
    my ($path) = @_;
    open my $fh, '<:raw', $path or die "$path: $!\n";
    local $/;
    return scalar <$fh>;
}

# Hijk::request's arguments for one entry of the job, built once for all its repeats (as a
# program repeating one request keeps its arguments); an upload's body is read per request.
sub arguments {
    my ($job, $client, $req) = @_;
    my ($host, $port, $path, $query) = $req->{url} =~ m{^http://([^/:?]+)(?::(\d+))?(/[^?]*)?(?:\?(.*))?$}
        or die "cannot split URL $req->{url}\n";
    my @head = %{$req->{headers} || {}};
    push @head, Connection => 'close' unless $job->{keep_alive};
    my $body;
    if (defined $req->{form}) {
        if (LabDriver::is_multipart($req)) {
            (my $type, $body) = LabDriver::multipart($req->{form});
            push @head, 'Content-Type' => $type;
        }
        else {
            $body = LabDriver::urlencoded($req->{form});
            push @head, 'Content-Type' => 'application/x-www-form-urlencoded';
        }
    }
    elsif (defined $req->{body_file}) {
        push @head, 'Content-Type' => $req->{content_type} // 'application/octet-stream';
    }
    my %args = (
        method => uc $req->{method}, host => $host, port => $port // 80, path => $path // '/',
        defined $query ? (query_string => $query) : (), head => \@head,
        defined $body ? (body => $body) : (),
        defined $job->{timeout_s} ? (timeout => $job->{timeout_s}) : (), parse_chunked => 1, socket_cache => $client->{cache},
    );
    if (defined $client->{nodelay}) {
        # Hijk calls on_connect right after it made a socket: ours is the only one in the cache
        my $own = $client->{cache} // {};
        $args{socket_cache} = $own;
        $args{on_connect} = sub {
            setsockopt($_, IPPROTO_TCP, TCP_NODELAY, $client->{nodelay} ? 1 : 0)
                or die "setsockopt TCP_NODELAY: $!\n" for grep { defined } values %$own;
        };
    }
    return \%args;
}

# "HTTP/1.1" => "1.1": each protocol string's label looked up once
my %HTTP;

sub run {
    my ($job, $client, $report) = @_;
    my $cache = $client->{cache};
    my $reqs = $job->{requests};
    # entry by entry: its arguments built once, then its repeats written out, each a Hijk::request
    # and its answer read back (an upload's file read in first), as a program repeating one
    # request writes its loop: no call of the lab's a request but the report's, no closure
    for my $r (0 .. $#$reqs) {
        my $req = $reqs->[$r];
        my $n = $req->{repeat} // 1;
        my $args = eval { arguments($job, $client, $req) };
        if (!$args) {
            my $why = $@ || 'building the request failed';
            $report->fail($r, $why) for 1 .. $n;
            next;
        }
        my $upload = $req->{body_file};
        my $own = $cache ? undef : $args->{socket_cache};    # keep-alive off: no socket kept
        # one eval for the repeats, entered again after a request that died (counted before it
        # is made, so the next one goes on): no eval set up a request
        my $i = 0;
        while ($i < $n) {
            eval {
                while ($i < $n) {
                    $i++;
                    $args->{body} = slurp($upload) if defined $upload;
                    my $res = Hijk::request($args);
                    %$own = () if $own;
                    die 'Hijk: ' . error_text($res) . "\n" if $res->{error};
                    my $proto = $res->{proto} // '';
                    $report->body($r, $res->{status}, $HTTP{$proto} //= LabDriver::http_label($proto), \$res->{body});
                }
                1;
            } or $report->fail($r, $@ || 'unknown error');
        }
    }
}

sub finish {
    my ($job, $client) = @_;
    my $cache = $client->{cache} or return;
    close $_ for values %$cache;
    %$cache = ();
}

LabDriver::main(
    versions => sub { {hijk => $Hijk::VERSION} },
    # Hijk writes head and body in one write and never sends Expect: 100-continue
    # accept_encoding "library": Hijk sends no Accept-Encoding and decodes nothing, as a job without accept_gzip does already
    options => {tcp_nodelay => undef, expect_100 => [JSON::PP::false],
                accept_encoding => ['library']},
    prepare => \&prepare,
    run => \&run,
    finish => \&finish,
);
