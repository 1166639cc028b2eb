#!/usr/bin/perl
# The golden transcript (drivers/contract/transcript.json) through LabDriver::main, with the
# transcript's contract client behind the helper's seam (prepare / run / finish). Each case runs
# in a child process whose stdin holds the case's lines and whose stdout goes to a file.
# Run: prove drivers/perl/_lib/t

use strict;
use warnings;
use FindBin ();
use lib "$FindBin::Bin/..";

use File::Temp ();
use JSON::PP ();
use LabDriver ();
use Test::More;

my $JSON = JSON::PP->new->utf8->canonical->allow_nonref;
my $transcript = do {
    open my $f, '<', "$FindBin::Bin/../../../contract/transcript.json" or die "transcript.json: $!";
    local $/;
    $JSON->decode(<$f>);
};

# the transcript's `client`
my %contract = (
    versions => sub { {contract => '1'} },
    options => {tcp_nodelay => undef, expect_100 => [JSON::PP::false]},
    prepare => sub {
        my ($job) = @_;
        my $scenario = $job->{scenario} // '';
        return (undef, 'the contract client refuses this job') if $scenario eq 'refused-by-client';
        die "the contract client cannot be built\n" if $scenario eq 'open-fails';
        return {verify => $job->{verify}};
    },
    run => sub {
        my ($job, $client, $report) = @_;
        LabDriver::each_request($job, $report, sub {
            my ($r, $req) = @_;
            die "connection refused\n" if index($req->{url}, '/fail') >= 0;
            my $status = $req->{url} =~ m{/status/(\d{3})} ? $1 : 200;
            my $body = $req->{url};
            $report->body($r, $status, '1.1', \$body);
        });
    },
    finish => sub { },
);

# the transcript's comparison: equal JSON, where a <...> string in $want is a pattern
sub matches {
    my ($want, $got) = @_;
    if (!ref $want && defined $want && $want =~ /^<(.*)>$/s) {
        my $pattern = $1;
        return defined $got && !ref $got && LabDriver::_json_type($got) eq 'string' if $pattern eq 'any string';
        return defined $got && !ref $got && LabDriver::_json_type($got) =~ /^(integer|number)$/ && $got >= 0
            if $pattern eq 'any number';
        return defined $got && !ref $got && index($got, $1) >= 0 if $pattern =~ /^text with: (.*)$/s;
    }
    if (ref $want eq 'HASH') {
        return 0 unless ref $got eq 'HASH';
        my $rest = $want->{'<more>'};
        for my $k (keys %$want) {
            next if $k eq '<more>';
            return 0 unless exists $got->{$k} && matches($want->{$k}, $got->{$k});
        }
        for my $k (keys %$got) {
            return 0 unless exists $want->{$k} || (defined $rest && matches($rest, $got->{$k}));
        }
        return 1;
    }
    if (ref $want eq 'ARRAY') {
        return 0 unless ref $got eq 'ARRAY' && @$got == @$want;
        matches($want->[$_], $got->[$_]) || return 0 for 0 .. $#$want;
        return 1;
    }
    return $JSON->encode($want) eq $JSON->encode($got);    # leaves: type and value alike
}

# the lab lines through LabDriver::main in a child; (its answers, its exit status)
sub talk {
    my ($lab) = @_;
    my $in = File::Temp->new;
    my $out = File::Temp->new;
    print {$in} ref $_ ? $JSON->encode($_) : $_, "\n" for @$lab;
    close $in;
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        open STDIN, '<', $in->filename or die "stdin: $!";
        open STDOUT, '>', $out->filename or die "stdout: $!";
        open STDERR, '>', '/dev/null' or die "stderr: $!";
        my $status = LabDriver::main(%contract);
        close STDOUT;
        require POSIX;
        POSIX::_exit($status);
    }
    waitpid $pid, 0;
    my $code = $?;
    open my $f, '<', $out->filename or die "answers: $!";
    my @got = map { my $m = eval { $JSON->decode($_) }; defined $m ? $m : $_ } grep { /\S/ } <$f>;
    return (\@got, $code);
}

for my $case (@{$transcript->{cases}}) {
    my ($got, $code) = talk($case->{lab});
    is $code, 0, "$case->{name}: the loop ends well";
    ok matches($case->{driver}, $got), $case->{name}
        or diag "$case->{about}\nwant " . $JSON->encode($case->{driver}) . "\ngot  " . $JSON->encode($got);
}

ok matches({a => '<text with: bad>', '<more>' => '<any string>'}, {a => 'a bad job', b => 'x'}),
    'the comparison takes patterns';
ok !matches({a => 1}, {a => 1, b => 'x'}) && !matches([1, 2], [2, 1]) && !matches('<any number>', JSON::PP::true)
    && !matches(1, '1'), 'and nothing else';

done_testing;
