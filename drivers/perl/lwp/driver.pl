#!/usr/bin/perl
# perl-lwp: one LWP::UserAgent for the job, requests one after another. Its connection cache
# (keep_alive => 1) reuses the connection; without it LWP closes after every request.

use strict;
use warnings;
use FindBin ();
use lib "$FindBin::Bin/../_lib";

use LabDriver ();
use HTTP::Cookies ();
use HTTP::Request ();
use HTTP::Request::Common ();
use JSON::PP ();
use LWP::UserAgent ();
use LWP::Protocol::https ();

my $CHUNK = 64 * 1024;

sub prepare {
    my ($job) = @_;
    for my $req (@{$job->{requests}}) {
        return (undef, 'LWP writes :content_file undecoded: no gzip into a file')
            if $job->{accept_gzip} && LabDriver::to_file($req);
    }
    my $ua = LWP::UserAgent->new(
        keep_alive => $job->{keep_alive} ? 1 : 0,
        defined $job->{timeout_s} ? (timeout => $job->{timeout_s}) : (),  # else the library's own
        cookie_jar => $job->{cookies} ? HTTP::Cookies->new : undef,
        ssl_opts => {verify_hostname => 1, defined $job->{tls_ca} ? (SSL_ca_file => $job->{tls_ca}) : ()},
    );
    # LWP follows GET and HEAD only: a method the job asks to follow is added as LWP's docs do
    my %redirectable = map { $_ => 1 } @{$ua->requests_redirectable};
    for my $req (grep { LabDriver::follows($_) } @{$job->{requests}}) {
        my $method = uc $req->{method};
        push @{$ua->requests_redirectable}, $method unless $redirectable{$method}++;
    }
    $ua->default_header('Accept-Encoding' => 'gzip') if $job->{accept_gzip};
    return $ua;
}

# the HTTP::Request for one entry of the job
sub build {
    my ($job, $req) = @_;
    my $method = uc $req->{method};
    my @headers = %{$req->{headers} || {}};
    if (defined $req->{form}) {
        my @fields = map { @$_ } LabDriver::form_pairs($req->{form});
        my $request = HTTP::Request::Common::POST($req->{url}, @headers, Content => \@fields,
            LabDriver::is_multipart($req) ? (Content_Type => 'form-data') : ());
        $request->method($method);
        return $request;
    }
    if (defined $req->{body_file}) {
        my $path = $req->{body_file};
        open my $fh, '<:raw', $path or die "$path: $!\n";
        my $reader = sub { my $n = read($fh, my $buf, $CHUNK); die "$path: $!\n" unless defined $n; $n ? $buf : '' };
        return HTTP::Request->new($method, $req->{url},
            [@headers, 'Content-Type' => $req->{content_type} // 'application/octet-stream',
             'Content-Length' => -s $path], $reader);
    }
    return HTTP::Request->new($method, $req->{url}, \@headers);
}

sub run {
    my ($job, $ua, $report) = @_;
    LabDriver::each_request($job, $report, sub {
        my ($r, $req) = @_;
        my $file = LabDriver::to_file($req) ? $req->{sink_path} : undef;
        # simple_request: LWP's one request that does not follow redirects, for an entry that
        # wants its 3xx; request follows (up to 7), as LWP's users call it
        my $res = LabDriver::no_follow($req) ? $ua->simple_request(build($job, $req), $file)
                                             : $ua->request(build($job, $req), $file);
        my $warning = $res->header('Client-Warning') // '';
        die $res->status_line . "\n" if $warning eq 'Internal response';
        die 'body not complete: ' . ($res->header('X-Died') // $res->header('Client-Aborted')) . "\n"
            if $res->header('X-Died') || $res->header('Client-Aborted');
        my $http = LabDriver::http_label($res->protocol);
        return $report->file($r, $res->code, $http, $file) if defined $file;
        if ($job->{accept_gzip}) {
            my $body = $res->decoded_content(charset => 'none') // die "gzip body could not be decoded\n";
            return $report->body($r, $res->code, $http, \$body);
        }
        # the body as LWP's users take it: $res->content returns a copy of the message's body,
        # which a program in LWP's documented idiom pays for (content_ref would skip it); a
        # temporary, freed after this statement as a plain loop's is (a `my` kept in this
        # closure would keep its buffer from one request to the next)
        $report->body($r, $res->code, $http, \scalar $res->content);
    });
}

sub finish {
    my ($job, $ua) = @_;
    $ua->conn_cache->drop if $ua->conn_cache;
}

LabDriver::main(
    versions => sub {
        {'libwww-perl' => $LWP::UserAgent::VERSION, 'lwp-protocol-https' => $LWP::Protocol::https::VERSION,
         'io-socket-ssl' => $IO::Socket::SSL::VERSION, 'net-ssleay' => $Net::SSLeay::VERSION}
    },
    # LWP never sets TCP_NODELAY (Nagle stays on) and never sends Expect: 100-continue
    # accept_encoding "library": LWP::UserAgent sends no Accept-Encoding and hands over the body as it came, as a job without accept_gzip does already
    options => {tcp_nodelay => [JSON::PP::false], expect_100 => [JSON::PP::false],
                accept_encoding => ['library']},
    prepare => \&prepare,
    run => \&run,
    finish => \&finish,
);
