package LabDriver;

# LabDriver: the clientlab driver protocol (docs/driver-protocol.md) for Perl drivers.
#
# A driver calls LabDriver::main(...) with the job options it honours and four steps:
# versions (hello), prepare (build the client, no connection), run (the timed phase) and
# finish (close the client). main() does hello / job / ready / go / done / report and
# refuses jobs that set an option the driver does not honour (capabilities are declared in
# driver.toml only and checked by the lab, which sends no job that needs one not claimed), and
# the calibration loop (bare: the same run on one kept client, timed by the
# driver's own clock). Core modules only (JSON::PP, Digest::SHA, Time::HiRes).

use strict;
use warnings;

use B ();
use Digest::SHA ();
use IO::Handle ();
use JSON::PP ();

our $VERSION = '1';

use constant PROTOCOL => 1;

# options known in protocol version 1 and the JSON type each value must have
my %OPTION_TYPES = (tcp_nodelay => 'boolean', max_host_connections => 'integer', share => 'array',
    expect_100 => 'boolean', multi_api => 'string', accept_encoding => 'string');

my $JSON = JSON::PP->new->utf8->canonical;
my $OUT;    # the protocol channel: the real stdout, kept apart from STDOUT

# --- the job -----------------------------------------------------------------------------

# A job option's value, or undef for "the client's default".
sub option {
    my ($job, $name) = @_;
    return ($job->{options} || {})->{$name};
}

# Every request of the job in order, each as often as its repeat, given to $code as
# ($r, $req); a request that dies becomes an error of the report, never the end of the run.
sub each_request {
    my ($job, $report, $code) = @_;
    my $reqs = $job->{requests};
    for my $r (0 .. $#$reqs) {
        my $req = $reqs->[$r];
        for (1 .. ($req->{repeat} // 1)) {
            eval { $code->($r, $req); 1 } or $report->fail($r, $@ || 'unknown error');
        }
    }
}

# True when the entry's form goes as multipart/form-data.
sub is_multipart {
    my ($req) = @_;
    return defined $req->{form} && ($req->{form_encoding} // 'urlencoded') eq 'multipart';
}

# An entry's follow_redirects is true (follow), false (report the 3xx itself) or absent (the
# URL does not redirect: set nothing, the library's redirect default stands).

# True when the entry asks to follow redirects.
sub follows {
    my ($req) = @_;
    return defined $req->{follow_redirects} && $req->{follow_redirects} ? 1 : 0;
}

# True when the entry asks for the 3xx itself (follow_redirects false, not absent).
sub no_follow {
    my ($req) = @_;
    return defined $req->{follow_redirects} && !$req->{follow_redirects} ? 1 : 0;
}

# True when the entry's body is streamed to sink_path.
sub to_file {
    my ($req) = @_;
    return ($req->{sink} // 'memory') eq 'file';
}

# The entry's form as [name, value] pairs sorted by name (JSON objects have no order), each
# as UTF-8 bytes: what goes on the wire, for libraries that take bytes.
sub form_pairs {
    my ($form) = @_;
    return map { [_bytes($_), _bytes($form->{$_})] } sort keys %$form;
}

sub _bytes {
    my ($s) = @_;
    utf8::encode($s);
    return $s;
}

sub _json_type {
    my ($value) = @_;
    return 'boolean' if JSON::PP::is_bool($value);
    return 'array' if ref $value eq 'ARRAY';
    return 'object' if ref $value eq 'HASH';
    my $flags = B::svref_2object(\$value)->FLAGS;
    return 'integer' if ($flags & (B::SVf_IOK() | B::SVf_NOK())) && !($flags & B::SVf_POK()) && $value == int $value;
    return 'number' if ($flags & (B::SVf_IOK() | B::SVf_NOK())) && !($flags & B::SVf_POK());
    return 'string';
}

sub _show {
    my ($value) = @_;
    return $JSON->allow_nonref->encode($value);
}

sub _same {
    my ($a, $b) = @_;
    return JSON::PP::is_bool($a) ? (JSON::PP::is_bool($b) && !!$a == !!$b) : (!ref $b && $a eq $b);
}

# Why a job cannot be done exactly (an option not honoured), or undef. $honoured maps each option the driver honours to the list of values it honours, or to undef
# for every value of the option's type.
sub refusal {
    my ($job, $honoured) = @_;
    my $options = $job->{options} || {};
    for my $name (sort keys %$options) {
        my $value = $options->{$name};
        next unless defined $value;
        return "option $name is not supported" unless exists $honoured->{$name};
        my $want = $OPTION_TYPES{$name};
        if (defined $want && _json_type($value) ne $want) {
            return "option $name must be a $want, got " . _show($value);
        }
        my $allowed = $honoured->{$name} or next;
        next if grep { _same($value, $_) } @$allowed;
        return "option $name=" . _show($value) . ' cannot be honoured (only '
            . join(', ', map { _show($_) } @$allowed) . ')';
    }
    return undef;
}

# --- bodies built by hand (for clients that take a raw body) -----------------------------

# application/x-www-form-urlencoded body of a form, fields sorted by name (RFC 3986 escapes).
sub urlencoded {
    my ($form) = @_;
    return join '&', map { _escape($_->[0]) . '=' . _escape($_->[1]) } form_pairs($form);
}

sub _escape {
    my ($s) = @_;
    $s =~ s/([^A-Za-z0-9\-._~])/sprintf('%%%02X', ord $1)/ge;
    return $s;
}

# A multipart/form-data body of plain fields: (content type, body).
sub multipart {
    my ($form) = @_;
    my $boundary = sprintf 'clientlab-%08x%08x%08x', map { int rand 0xffffffff } 1 .. 3;
    my $body = '';
    for my $pair (form_pairs($form)) {
        my ($name, $value) = @$pair;
        $body .= "--$boundary\r\nContent-Disposition: form-data; name=\"$name\"\r\n\r\n$value\r\n";
    }
    return ("multipart/form-data; boundary=$boundary", $body . "--$boundary--\r\n");
}

# "HTTP/1.1" => "1.1", "HTTP/2" or "HTTP/2.0" => "2"; each protocol string's label is worked
# out once (it is asked for every response).
my %HTTP_LABEL;

sub http_label {
    my ($proto) = @_;
    $proto //= '';
    return $HTTP_LABEL{$proto} //= do {
        my $v = $proto =~ m{^HTTP/(\d(?:\.\d)?)} ? $1 : '1.1';
        $v eq '2.0' ? '2' : $v;
    };
}

# --- the report ---------------------------------------------------------------------------

package LabDriver::Report;

# The responses as one flat list (r, status, http, bytes for each), their items built after
# `done` (responses): a hash per response, built and kept through the timed phase, costs twice
# as much as one push of its four fields.
sub new {
    my ($class, $verify) = @_;
    return bless {verify => $verify, items => [], sha256 => [], errors => []}, $class;
}

# One response whose whole (decoded) body is in memory: ($r, $status, $http, \$body). Called for
# every response of the timed phase, so its arguments are read in place (@_), not copied out.
sub body {
    my $self = $_[0];
    push @{$self->{items}}, $_[1], $_[2], $_[3], length(${$_[4]} // '');
    push @{$self->{sha256}}, Digest::SHA::sha256_hex(${$_[4]} // '') if $self->{verify};
}

# One response streamed to $path (its size, and digest when verifying, read from the file).
sub file {
    my ($self, $r, $status, $http, $path) = @_;
    push @{$self->{items}}, $r, $status, $http, (-s $path) || 0;
    if ($self->{verify}) {
        my $sha = Digest::SHA->new(256);
        $sha->addfile($path, 'b') if -e $path;
        push @{$self->{sha256}}, $sha->hexdigest;
    }
}

# The responses in the report's wire format (after `done`).
sub responses {
    my ($self) = @_;
    my $items = $self->{items};
    return [map {
        my $i = 4 * $_;
        my $item = {r => 0 + $items->[$i], status => 0 + $items->[$i + 1], http => $items->[$i + 2],
            bytes => 0 + $items->[$i + 3]};
        $item->{sha256} = $self->{sha256}[$_] if $self->{verify};
        $item
    } 0 .. @$items / 4 - 1];
}

# One request that got no response.
sub fail {
    my ($self, $r, $message) = @_;
    push @{$self->{errors}}, {r => 0 + $r, message => LabDriver::_error_text($message)};
}

# The bare loop's stand-in for a Report: the same calls, but it only counts, so that the
# calibration loop pays for no report (no digest, no stat of a sink file) a plain program
# would not build.
package LabDriver::Tally;

sub new {
    my ($class) = @_;
    return bless {responses => 0, errors => 0, first_error => undef}, $class;
}

sub body { $_[0]{responses}++ }
sub file { $_[0]{responses}++ }

sub fail {
    my ($self, $r, $message) = @_;
    $self->{errors}++;
    $self->{first_error} //= LabDriver::_error_text($message);
}

package LabDriver;

# A failure as the report gives it: one line, at most 500 characters.
sub _error_text {
    my ($message) = @_;
    $message = "$message";
    $message =~ s/\s+$//;
    return substr($message, 0, 500);
}

# --- the message loop ---------------------------------------------------------------------

sub log_line {
    print STDERR @_, "\n";
}

sub _send {
    my ($message) = @_;
    print {$OUT} $JSON->encode($message), "\n";
}

# The job of a job or bare message if it has the shape of one, else undef (after saying why).
sub _parse_job {
    my ($candidate) = @_;
    return $candidate if ref $candidate eq 'HASH' && ref $candidate->{requests} eq 'ARRAY';
    _send({type => 'error', message => 'bad job: no requests'});
    return undef;
}

# Check a job and build its client: ($job, $client), or () after answering unsupported or error.
sub _open {
    my ($driver, $candidate) = @_;
    my $job = _parse_job($candidate) // return;
    my $reason = refusal($job, $driver->{options} || {});
    if (defined $reason) {
        _send({type => 'unsupported', reason => $reason});
        return;
    }
    my ($built, $why);
    if (!eval { ($built, $why) = $driver->{prepare}->($job); 1 }) {
        my $err = $@;
        log_line($err);
        $err =~ s/\s+$//;
        _send({type => 'error', message => "building the client failed: $err"});
        return;
    }
    if (!defined $built) {
        _send({type => 'unsupported', reason => $why // 'the client cannot do this job'});
        return;
    }
    return ($job, $built);
}

# Every request of the job on $client, each outcome into $collector (a Report for a timed
# trial, a Tally for a bare round): one loop for both, so the bare loop measures the same code.
sub _run {
    my ($driver, $job, $client, $collector) = @_;
    return if eval { $driver->{run}->($job, $client, $collector); 1 };
    log_line($@);
    $collector->fail(0, $@);
}

sub _close {
    my ($driver, $job, $client) = @_;
    eval { $driver->{finish}->($job, $client) if $driver->{finish}; 1 } or log_line("finish: $@");
}

# One round of the calibration loop: the job's requests on the kept client ($bare, built by
# the first round and reused after, as a long-lived program would), timed by the driver's own
# monotonic clock, nothing kept but counts. Returns the kept [job, client], or undef when the
# first round could not build one.
sub _bare_round {
    my ($driver, $bare, $candidate) = @_;
    my ($job, $client);
    if ($bare) {
        $job = _parse_job($candidate) // return $bare;
        $client = $bare->[1];
    }
    else {
        ($job, $client) = _open($driver, $candidate) or return undef;
        # loaded here, not at start-up: a process that never calibrates carries none of it
        require Time::HiRes;
    }
    my $tally = LabDriver::Tally->new;
    my $t0 = Time::HiRes::clock_gettime(Time::HiRes::CLOCK_MONOTONIC());
    _run($driver, $job, $client, $tally);
    my $wall = Time::HiRes::clock_gettime(Time::HiRes::CLOCK_MONOTONIC()) - $t0;
    _send({type => 'bare', wall_s => $wall, requests => $tally->{responses}, errors => $tally->{errors},
        defined $tally->{first_error} ? (error => $tally->{first_error}) : ()});
    return [$job, $client];
}

# The lab's profile of a go (clientlab/profile/samplers.py), only in a process the lab started
# for one (Devel::NYTProf loaded, off until now, and CLIENTLAB_PROFILE_DIR set): NYTProf on from
# go to done, writing CLIENTLAB_PROFILE_DIR/<pid>-<n>.nytprof. True when it was switched on.
my $profiles = 0;

sub _profile_start {
    my $dir = $ENV{CLIENTLAB_PROFILE_DIR};
    return 0 unless defined $dir && length $dir && defined &DB::enable_profile;
    DB::enable_profile(sprintf '%s/%d-%d.nytprof', $dir, $$, ++$profiles);
    return 1;
}

# Run the driver on stdin/stdout. Arguments (a hash):
#   versions => sub { {name => version, ...} }      library versions (perl is added)
#   options  => {name => [values] | undef}           job options honoured
#   prepare  => sub ($job) { $client | (undef, $reason) }   build the client, no connection
#   run      => sub ($job, $client, $report)         the timed phase
#   finish   => sub ($job, $client)                  close the client (after the report)
# A bare round calls run with a LabDriver::Tally in place of the report; its client is built
# by prepare on the first round, kept for the next ones and closed by finish at the next job
# or at end of input.
sub main {
    my (%driver) = @_;

    # the real stdout becomes the protocol channel; STDOUT points at stderr, so a library's
    # stray output cannot corrupt the protocol
    open $OUT, '>&', \*STDOUT or die "dup stdout: $!";
    open STDOUT, '>&', \*STDERR or die "stdout to stderr: $!";
    binmode $OUT;
    $OUT->autoflush(1);
    STDERR->autoflush(1);
    $SIG{PIPE} = 'IGNORE';    # a peer that goes away is a request error, not the end

    my ($job, $client);
    my $bare;    # [job, client] of the calibration loop, while one is open
    while (defined(my $line = <STDIN>)) {
        next unless $line =~ /\S/;
        my $msg = eval { $JSON->decode($line) };
        my $type = ref $msg eq 'HASH' ? ($msg->{type} // '') : '';
        if ($type eq 'hello') {
            my %versions = (perl => sprintf('%vd', $^V), %{$driver{versions}->()});
            defined $versions{$_} ? ($versions{$_} = "$versions{$_}") : delete $versions{$_} for keys %versions;
            _send({type => 'hello', protocol => PROTOCOL, versions => \%versions});
        }
        elsif ($type eq 'job') {
            ($job, $client) = ();
            _close(\%driver, @{$bare}) if $bare;
            $bare = undef;
            ($job, $client) = _open(\%driver, $msg->{job}) or next;
            _send({type => 'ready'});
        }
        elsif ($type eq 'go') {
            if (!defined $job) {
                _send({type => 'error', message => 'go without a ready job'});
                next;
            }
            my $report = LabDriver::Report->new($job->{verify} ? 1 : 0);
            my $profile = _profile_start();
            _run(\%driver, $job, $client, $report);
            DB::disable_profile() if $profile;
            _send({type => 'done'});    # before the report: serialising it is not timed
            DB::finish_profile() if $profile;    # the profile's file complete before the report
            _send({type => 'report', responses => $report->responses, errors => $report->{errors}});
            _close(\%driver, $job, $client);    # no connection survives the job
            ($job, $client) = ();
        }
        elsif ($type eq 'bare') {
            $bare = _bare_round(\%driver, $bare, $msg->{job});
        }
        else {
            _send({type => 'error', message => 'unknown message: ' . substr($line =~ s/\s+$//r, 0, 200)});
        }
    }
    _close(\%driver, @{$bare}) if $bare;
    return 0;
}

1;
