"""A Perl profile counts CPU: a sub the scheduler took off the core keeps none of the wait.

NYTProf's times split the interpreter's share of perf's cpu-clock samples between the Perl subs
(layers.py): counted in wall time, a sub that was descheduled (a busy host, the bench server
woken on the same core) or stopped kept the whole pause, and a driver's harness read as much as
its luck with the scheduler."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from clientlab.profile import tools
from clientlab.profile.folded import self_counts
from clientlab.profile.samplers import INPROC_ENV, NYTProf, process_env

STOPPED_S = 1.0
SPUN_S = 0.02   # CPU the sub has spun before it is stopped: past the write that said it started

# As LabDriver.pm profiles a go: NYTProf on, a sub of the driver's, NYTProf off and its file
# finished. The sub spins until told to end, and says the thread's CPU time it used (Time::HiRes'
# XS call, a sub of its own that NYTProf times apart), measured around its own work.
SCRIPT = r"""
use strict;
use warnings;
use Time::HiRes ();
my $go = 0;
$SIG{USR1} = sub { $go = 1 };
sub cpu { Time::HiRes::clock_gettime(Time::HiRes::CLOCK_THREAD_CPUTIME_ID()) }
sub wall { Time::HiRes::clock_gettime(Time::HiRes::CLOCK_MONOTONIC()) }
sub spins_until_told {
    my ($c0, $w0) = (cpu(), wall());
    syswrite STDOUT, "spinning\n";
    1 until $go;
    return (cpu() - $c0, wall() - $w0);
}
DB::enable_profile("$ENV{CLIENTLAB_PROFILE_DIR}/$$-1.nytprof");
my ($cpu, $wall) = spins_until_told();
DB::disable_profile();
DB::finish_profile();
printf "%.6f %.6f\n", $cpu, $wall;
"""


def _cpu_s(pid: int) -> float:
    """The CPU time a process has run, in seconds (the scheduler's own count, in ns)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def test_a_perl_sub_stopped_mid_run_keeps_its_cpu_time_not_the_pause(tmp_path):
    tools.nytprof()   # installed on first use, as a profiled run does
    env = {**os.environ, **(process_env("perl") or {}), INPROC_ENV: str(tmp_path)}
    perl = subprocess.Popen(["perl", "-e", SCRIPT], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert perl.stdout is not None
        assert perl.stdout.readline() == "spinning\n", f"the script did not start (exit {perl.poll()})"
        # stopped once it spins: right after its write it may still be within the write (the
        # reader woken on the same core runs first), which NYTProf times as an op of its own
        started = _cpu_s(perl.pid)
        while _cpu_s(perl.pid) < started + SPUN_S and perl.poll() is None:
            time.sleep(0.005)
        perl.send_signal(signal.SIGSTOP)   # off the core, as a descheduled driver is
        try:
            perl.wait(timeout=STOPPED_S)
        except subprocess.TimeoutExpired:
            pass
        perl.send_signal(signal.SIGCONT)
        perl.send_signal(signal.SIGUSR1)
        out, _ = perl.communicate(timeout=60)
    finally:
        if perl.poll() is None:
            perl.kill()
            perl.wait()
    assert perl.returncode == 0
    cpu_s, wall_s = (float(x) for x in out.split())
    assert wall_s - cpu_s >= STOPPED_S * 0.9, "the sub was not held off the core: the test proves nothing"

    sampler = NYTProf()
    profile = next(tmp_path.glob("*-1.nytprof"))
    own = {frame: us for frame, us in self_counts(sampler.convert(profile)).items() if "spins_until_told" in frame}
    assert own, "NYTProf recorded no time for the sub"
    counted_s = sum(own.values()) / 1e6
    # the sub's own time as NYTProf counts it cannot be more than the CPU the thread used in it
    # (5 ms for the clock's tick and rounding); in wall time it held the whole stop
    assert counted_s <= cpu_s + 0.005, (
        f"NYTProf gave the sub {counted_s * 1e3:.1f} ms, the thread used {cpu_s * 1e3:.1f} ms of CPU in it "
        f"and was stopped {wall_s - cpu_s:.2f} s: it counts wall time")
