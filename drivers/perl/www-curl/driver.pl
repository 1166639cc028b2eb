#!/usr/bin/perl
# perl-www-curl: libcurl's easy interface through WWW::Curl::Easy, one handle for the job,
# reused for every request (its connection cache, cookie engine and TLS sessions stay).
# The binding has no curl_easy_reset: each entry of the job sets every option it depends on,
# once for all its repeats.

use strict;
use warnings;
use FindBin ();
use lib "$FindBin::Bin/../_lib";

use LabDriver ();
use WWW::Curl::Easy;
use WWW::Curl::Form;

my %HTTP_VERSION = ('1.1' => CURL_HTTP_VERSION_1_1, '2' => CURL_HTTP_VERSION_2TLS);
my %HTTP_LABEL = (CURL_HTTP_VERSION_1_0, '1.0', CURL_HTTP_VERSION_1_1, '1.1', CURL_HTTP_VERSION_2_0, '2');

sub setopt {
    my ($curl, $option, $value) = @_;
    my $rc = $curl->setopt($option, $value);
    die 'curl_easy_setopt: ' . $curl->strerror($rc) . "\n" if $rc;
}

sub prepare {
    my ($job) = @_;
    my $curl = WWW::Curl::Easy->new;
    setopt($curl, CURLOPT_HTTP_VERSION, $HTTP_VERSION{$job->{http}}
        // return (undef, "HTTP version $job->{http} is not offered"));
    setopt($curl, CURLOPT_TIMEOUT_MS, int($job->{timeout_s} * 1000)) if defined $job->{timeout_s};
    setopt($curl, CURLOPT_CAINFO, $job->{tls_ca}) if defined $job->{tls_ca};
    if (!$job->{keep_alive}) {
        setopt($curl, CURLOPT_FORBID_REUSE, 1);
        setopt($curl, CURLOPT_FRESH_CONNECT, 1);
    }
    setopt($curl, CURLOPT_COOKIEFILE, '') if $job->{cookies};    # the cookie engine, in memory
    setopt($curl, CURLOPT_ACCEPT_ENCODING, 'gzip') if $job->{accept_gzip};
    my $nodelay = LabDriver::option($job, 'tcp_nodelay');
    setopt($curl, CURLOPT_TCP_NODELAY, $nodelay ? 1 : 0) if defined $nodelay;
    return {curl => $curl, form => undef};
}

# Set the handle up for one entry of the job: everything but the transfer's own buffers and
# files. The handle keeps its options between transfers, so an entry's repeats set nothing again,
# as a program that reuses one handle for the same request does.
sub configure {
    my ($job, $client, $req) = @_;
    my $curl = $client->{curl};
    my $method = uc $req->{method};
    my @headers = map { "$_: $req->{headers}{$_}" } sort keys %{$req->{headers} || {}};
    my $expect = LabDriver::option($job, 'expect_100');
    push @headers, $expect ? 'Expect: 100-continue' : 'Expect:' if defined $expect;
    setopt($curl, CURLOPT_URL, $req->{url});
    # absent: the URL does not redirect, FOLLOWLOCATION stays as it is (libcurl's default, off,
    # unless an earlier entry of the job set it)
    setopt($curl, CURLOPT_FOLLOWLOCATION, LabDriver::follows($req)) if defined $req->{follow_redirects};
    setopt($curl, CURLOPT_CUSTOMREQUEST, undef);
    setopt($curl, CURLOPT_UPLOAD, 0);    # also resets the method to GET
    setopt($curl, CURLOPT_HTTPGET, 1);
    if (defined $req->{form}) {
        if (LabDriver::is_multipart($req)) {
            my $form = WWW::Curl::Form->new;
            $form->formadd(@$_) for LabDriver::form_pairs($req->{form});
            setopt($curl, CURLOPT_HTTPPOST, $form);
            $client->{form} = $form;    # libcurl reads it during the transfers
        }
        else {
            my $fields = LabDriver::urlencoded($req->{form});
            setopt($curl, CURLOPT_POSTFIELDSIZE_LARGE, length $fields);
            setopt($curl, CURLOPT_COPYPOSTFIELDS, $fields);
        }
        setopt($curl, CURLOPT_CUSTOMREQUEST, $method) if $method ne 'POST';
    }
    elsif (defined $req->{body_file}) {
        setopt($curl, CURLOPT_UPLOAD, 1);
        setopt($curl, CURLOPT_INFILESIZE_LARGE, -s $req->{body_file});
        setopt($curl, CURLOPT_CUSTOMREQUEST, $method) if $method ne 'PUT';
        push @headers, 'Content-Type: ' . ($req->{content_type} // 'application/octet-stream');
    }
    elsif ($method ne 'GET') {
        setopt($curl, CURLOPT_CUSTOMREQUEST, $method);
    }
    setopt($curl, CURLOPT_HTTPHEADER, \@headers);
}

# What each transfer of an entry needs of its own: the upload's file, opened anew, and where the
# body goes. Returns the file handle of a file sink, or undef.
sub attach {
    my ($client, $req, $body) = @_;
    my $curl = $client->{curl};
    if (defined $req->{body_file}) {
        my $path = $req->{body_file};
        open my $in, '<:raw', $path or die "$path: $!\n";
        $client->{upload} = $in;
        setopt($curl, CURLOPT_READDATA, $in);
    }
    if (LabDriver::to_file($req)) {
        my $path = $req->{sink_path};
        open my $out, '>:raw', $path or die "$path: $!\n";
        setopt($curl, CURLOPT_WRITEDATA, $out);
        return $out;
    }
    setopt($curl, CURLOPT_WRITEDATA, $body);
    return undef;
}

sub run {
    my ($job, $client, $report) = @_;
    my $curl = $client->{curl};
    my $configured;    # the entry whose options the handle holds
    my $plain;         # it has no file of its own (no upload, no file sink): only a buffer to set
    LabDriver::each_request($job, $report, sub {
        my ($r, $req) = @_;
        if (!defined $configured || $configured != $r) {
            undef $configured;    # until this entry's options are all set
            configure($job, $client, $req);
            $configured = $r;
            $plain = !defined $req->{body_file} && !LabDriver::to_file($req);
        }
        my $body = '';
        my $sink;
        if ($plain) {
            $curl->setopt(CURLOPT_WRITEDATA, \$body);    # a reference: it cannot be refused
        }
        else {
            $sink = attach($client, $req, \$body);
        }
        my $rc = $curl->perform;
        close delete $client->{upload} if $client->{upload};
        close $sink or die "writing $req->{sink_path}: $!\n" if $sink;
        die "curl error $rc: " . ($curl->errbuf || $curl->strerror($rc)) . "\n" if $rc;
        my $status = $curl->getinfo(CURLINFO_RESPONSE_CODE);
        my $http = $HTTP_LABEL{$curl->getinfo(CURLINFO_HTTP_VERSION)} // '1.1';
        return $report->file($r, $status, $http, $req->{sink_path}) if $sink;
        $report->body($r, $status, $http, \$body);
    });
}

sub finish {
    my ($job, $client) = @_;
    %$client = ();    # the handle closes its connections when released
}

LabDriver::main(
    versions => sub {
        my ($libcurl) = WWW::Curl::Easy::version() =~ m{^libcurl/(\S+)};
        my ($ssl) = WWW::Curl::Easy::version() =~ m{^libcurl/\S+ (\S+)};
        {'www-curl' => $WWW::Curl::Easy::VERSION, libcurl => $libcurl, ssl => $ssl}
    },
    # accept_encoding "library": libcurl sends no Accept-Encoding unless CURLOPT_ACCEPT_ENCODING is set, as a job without accept_gzip does already
    options => {tcp_nodelay => undef, expect_100 => undef,
                accept_encoding => ['library']},
    prepare => \&prepare,
    run => \&run,
    finish => \&finish,
);
