#!/usr/bin/perl
# perl-http-tiny: one HTTP::Tiny object for the job, requests one after another; keep_alive
# reuses its one connection, HTTP::CookieJar keeps cookies, data_callback streams to a file.

use strict;
use warnings;
use FindBin ();
use lib "$FindBin::Bin/../_lib";

use LabDriver ();
use HTTP::CookieJar ();
use HTTP::Tiny ();
use IO::Socket::SSL ();
use JSON::PP ();

my $CHUNK = 64 * 1024;

sub prepare {
    my ($job) = @_;
    for my $req (@{$job->{requests}}) {
        # HTTP::Tiny follows 301/302/307/308 for GET and HEAD only (and 303 for any method)
        return (undef, "HTTP::Tiny does not follow redirects of $req->{method} requests")
            if LabDriver::follows($req) && uc($req->{method}) !~ /^(?:GET|HEAD)$/;
    }
    my $http = HTTP::Tiny->new(
        keep_alive => $job->{keep_alive} ? 1 : 0,
        defined $job->{timeout_s} ? (timeout => $job->{timeout_s}) : (),  # else the library's own
        verify_SSL => 1,
        SSL_options => {defined $job->{tls_ca} ? (SSL_ca_file => $job->{tls_ca}) : ()},
        $job->{cookies} ? (cookie_jar => HTTP::CookieJar->new) : (),
    );
    return {http => $http, max_redirect => $http->max_redirect};    # HTTP::Tiny's default, 5
}

sub run {
    my ($job, $client, $report) = @_;
    my $http = $client->{http};
    LabDriver::each_request($job, $report, sub {
        my ($r, $req) = @_;
        my %headers = %{$req->{headers} || {}};
        my %options = (headers => \%headers);
        if (defined $req->{form}) {
            if (LabDriver::is_multipart($req)) {
                ($headers{'Content-Type'}, $options{content}) = LabDriver::multipart($req->{form});
            }
            else {
                $options{content} = $http->www_form_urlencode($req->{form});
                $headers{'Content-Type'} = 'application/x-www-form-urlencoded';
            }
        }
        elsif (defined $req->{body_file}) {
            my $path = $req->{body_file};
            open my $in, '<:raw', $path or die "$path: $!\n";
            $headers{'Content-Type'} = $req->{content_type} // 'application/octet-stream';
            $headers{'Content-Length'} = -s $path;
            $options{content} = sub {    # streamed from the file
                my $n = read($in, my $buf, $CHUNK);
                die "$path: $!\n" unless defined $n;
                return $n ? $buf : undef;
            };
        }
        my $sink;
        if (LabDriver::to_file($req)) {
            open $sink, '>:raw', $req->{sink_path} or die "$req->{sink_path}: $!\n";
            $options{data_callback} = sub { print {$sink} $_[0] or die "writing $req->{sink_path}: $!\n" };
        }
        # the object's setting, for this request: only where the job names it (absent: as is)
        $http->max_redirect(LabDriver::follows($req) ? $client->{max_redirect} : 0)
            if defined $req->{follow_redirects};
        my $res = $http->request(uc $req->{method}, $req->{url}, \%options);
        if ($sink) {
            close $sink or die "writing $req->{sink_path}: $!\n";
        }
        die "$res->{content}\n" if $res->{status} == 599;    # HTTP::Tiny's own error
        my $proto = LabDriver::http_label($res->{protocol});
        return $report->file($r, $res->{status}, $proto, $req->{sink_path}) if $sink;
        $report->body($r, $res->{status}, $proto, \$res->{content});
    });
}

sub finish {
    my ($job, $client) = @_;
    %$client = ();    # the kept connection closes with the object
}

LabDriver::main(
    versions => sub {
        {'http-tiny' => $HTTP::Tiny::VERSION, 'http-cookiejar' => $HTTP::CookieJar::VERSION,
         'io-socket-ssl' => $IO::Socket::SSL::VERSION, 'net-ssleay' => $Net::SSLeay::VERSION}
    },
    # HTTP::Tiny never sets TCP_NODELAY (Nagle stays on) and never sends Expect: 100-continue
    # accept_encoding "library": HTTP::Tiny sends no Accept-Encoding and decodes nothing, as a job without accept_gzip does already
    options => {tcp_nodelay => [JSON::PP::false], expect_100 => [JSON::PP::false],
                accept_encoding => ['library']},
    prepare => \&prepare,
    run => \&run,
    finish => \&finish,
);
