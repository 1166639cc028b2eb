#!/usr/bin/perl
# Test driver perl-lwp-planted: perl-lwp with a deliberate busy sub on every request, which the CPU
# profile's differential must find and name (planted_slow_path). The lwp driver runs as it is; the
# helper's loop over the job's requests calls the busy sub before each.

use strict;
use warnings;
use FindBin ();
use lib "$FindBin::Bin/../../../drivers/perl/_lib";

use LabDriver ();

my $LOOPS = $ENV{PLANTED_LOOPS} // 60000;

# a plain loop, no sub call: every moment in it is this sub's own. It costs several times LWP's own
# work a request, so that neither a slow reference cell on a busy host nor NYTProf's wall-clock
# times (a sub the process was descheduled in gets the wait) come near it.
sub planted_slow_path {
    my $x = 0;
    for my $i (1 .. $LOOPS) {
        $x = ($x ^ ($i * 7)) & 0xffffffff;
    }
    return $x;
}

{
    no warnings 'redefine';
    my $each = \&LabDriver::each_request;
    *LabDriver::each_request = sub {
        my ($job, $report, $code) = @_;
        $each->($job, $report, sub { planted_slow_path(); $code->(@_) });
    };
}

my $lwp = "$FindBin::Bin/../../../drivers/perl/lwp/driver.pl";
my $done = do $lwp;    # LabDriver::main's 0 at the end of input
die "$lwp: $@" if $@;
die "$lwp: $!\n" unless defined $done;
