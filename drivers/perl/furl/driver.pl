#!/usr/bin/perl
# perl-furl: one Furl object for the job, requests one after another. Furl keeps the last
# connection for reuse (keep-alive); with "Connection: close" it opens one per request.

use strict;
use warnings;
use FindBin ();
use lib "$FindBin::Bin/../_lib";

use LabDriver ();
use Furl ();
use HTTP::CookieJar ();
use IO::Socket::SSL ();
use JSON::PP ();

sub prepare {
    my ($job) = @_;
    my $furl = Furl->new(
        defined $job->{timeout_s} ? (timeout => $job->{timeout_s}) : (),  # else Furl's own
        headers => [$job->{keep_alive} ? () : (Connection => 'close'),
                    $job->{accept_gzip} ? ('Accept-Encoding' => 'gzip') : ()],
        $job->{cookies} ? (cookie_jar => HTTP::CookieJar->new) : (),
        # Furl verifies by default (SSL_VERIFY_PEER, the 'www' name scheme): only the job's CA
        ssl_opts => {defined $job->{tls_ca} ? (SSL_ca_file => $job->{tls_ca}) : ()},
    );
    return {furl => $furl};
}

# Furl's arguments for one entry of the job, built once for all its repeats: its headers, its
# form (Furl urlencodes a list of pairs) and its redirect limit
sub arguments {
    my ($req) = @_;
    my @headers = %{$req->{headers} || {}};
    my $content;
    if (defined $req->{form}) {
        if (LabDriver::is_multipart($req)) {
            (my $type, $content) = LabDriver::multipart($req->{form});
            push @headers, 'Content-Type' => $type;
        }
        else {
            $content = [map { @$_ } LabDriver::form_pairs($req->{form})];    # Furl urlencodes it
        }
    }
    elsif (defined $req->{body_file}) {
        push @headers, 'Content-Type' => $req->{content_type} // 'application/octet-stream';
    }
    return [method => uc $req->{method}, url => $req->{url}, headers => \@headers,
        defined $content ? (content => $content) : (),
        # Furl follows up to 7 by default: only an entry that wants its 3xx says otherwise
        LabDriver::no_follow($req) ? (max_redirects => 0) : ()];
}

# One request of an entry with files of its own: the upload streamed from its file, the body
# streamed to the sink's
sub with_files {
    my ($furl, $report, $r, $req, $args) = @_;
    my ($upload, $sink);
    if (defined $req->{body_file}) {
        open $upload, '<:raw', $req->{body_file} or die "$req->{body_file}: $!\n";    # streamed
    }
    if (LabDriver::to_file($req)) {
        open $sink, '>:raw', $req->{sink_path} or die "$req->{sink_path}: $!\n";
    }
    my $res = $furl->request(@$args, $upload ? (content => $upload) : (), $sink ? (write_file => $sink) : ());
    if ($sink) {
        close $sink or die "writing $req->{sink_path}: $!\n";
    }
    die $res->content . "\n" if $res->code == 500 && $res->header('X-Internal-Response');
    my $http = LabDriver::http_label($res->protocol);
    return $report->file($r, $res->code, $http, $req->{sink_path}) if $sink;
    $report->body($r, $res->code, $http, \$res->content);
}

# "HTTP/1.1" => "1.1": each protocol string's label looked up once
my %HTTP;

sub run {
    my ($job, $client, $report) = @_;
    my $furl = $client->{furl};
    my $reqs = $job->{requests};
    # entry by entry: its arguments built once, then its repeats written out, each a request and
    # its answer read back (a transfer with files of its own also opens them), as a program
    # repeating one request writes its loop: no call of the lab's a request but the report's
    for my $r (0 .. $#$reqs) {
        my $req = $reqs->[$r];
        my $n = $req->{repeat} // 1;
        my $args = eval { arguments($req) };
        if (!$args) {
            my $why = $@ || 'building the request failed';
            $report->fail($r, $why) for 1 .. $n;
            next;
        }
        if (defined $req->{body_file} || LabDriver::to_file($req)) {
            for (1 .. $n) {
                eval { with_files($furl, $report, $r, $req, $args); 1 } or $report->fail($r, $@ || 'unknown error');
            }
            next;
        }
        # one eval for the repeats, entered again after a request that died (counted before it
        # is made, so the next one goes on): no eval set up a request
        my $i = 0;
        while ($i < $n) {
            eval {
                while ($i < $n) {
                    $i++;
                    my $res = $furl->request(@$args);
                    my $status = $res->code;
                    # Furl answers its own failures (connect, timeout, ...) as a 500 marked
                    # X-Internal-Response: only a 500 is looked at
                    die $res->content . "\n" if $status == 500 && $res->header('X-Internal-Response');
                    $report->body($r, $status, $HTTP{$res->protocol} //= LabDriver::http_label($res->protocol),
                        \$res->content);
                }
                1;
            } or $report->fail($r, $@ || 'unknown error');
        }
    }
}

sub finish {
    my ($job, $client) = @_;
    %$client = ();    # the pooled connection closes with the object
}

LabDriver::main(
    versions => sub {
        {furl => $Furl::VERSION, 'http-parser-xs' => $HTTP::Parser::XS::VERSION,
         'io-socket-ssl' => $IO::Socket::SSL::VERSION, 'net-ssleay' => $Net::SSLeay::VERSION}
    },
    # Furl sets TCP_NODELAY on every socket and never sends Expect: 100-continue
    # accept_encoding "library": Furl sends no Accept-Encoding of its own, as a job without accept_gzip does already
    options => {tcp_nodelay => [JSON::PP::true], expect_100 => [JSON::PP::false],
                accept_encoding => ['library']},
    prepare => \&prepare,
    run => \&run,
    finish => \&finish,
);
