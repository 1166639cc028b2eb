"""A trial's timed phase and the samplers that watch it."""

from __future__ import annotations

import os
import time

from clientlab.measuring.measure import Usage
from clientlab.measuring.noise import Noise
from clientlab.runner.trial import timed_phase


class ScriptedDriver:
    """Answers the timed phase's messages as a driver does, and logs each exchange."""

    def __init__(self, log: list[str]):
        self.log, self.pid = log, os.getpid()
        self.answers = [{"type": "ready"}, {"type": "done"}, {"type": "report", "responses": [], "errors": []}]

    def send(self, message: dict) -> None:
        self.log.append(f"lab sends {message['type']}")

    def receive(self, expected: set[str], timeout: float) -> dict:
        answer = self.answers.pop(0)
        self.log.append(f"driver says {answer['type']}")
        return answer


class Server:
    def alive(self) -> bool:
        return True

    def reset(self) -> None:
        pass

    def counters(self) -> dict:
        return {}


class LoggedSampler:
    def __init__(self, name: str, log: list[str]):
        self.name, self.log = name, log

    def start(self, pids: list[int]) -> None:
        self.log.append(f"{self.name} start")

    def halt(self, done_at: float | None = None) -> None:
        self.log.append(f"{self.name} halt")
        self.done_at = done_at

    def stop(self) -> None:
        self.log.append(f"{self.name} stop")


class StillMeter:
    stopped_at = 0.0

    def start(self) -> float:
        return 0.0

    def stop(self, t1: float) -> Usage:
        self.stopped_at = time.time()
        return Usage(wall_s=0.1, user_s=0.05, sys_s=0.0, peak_rss_kb=1)


class QuietNoise:
    def start(self) -> None:
        pass

    def stop(self) -> Noise:
        return Noise(steal_s=0.0, other_cpu_s=0.0, wall_s=0.1)


def test_every_sampler_is_halted_at_done_before_any_is_waited_for():
    # perf takes a while to write its data: a py-spy or rbspy stopped only after it would go on
    # sampling the driver's report and the closing of its client, none of the trial's CPU
    log: list[str] = []
    samplers = [LoggedSampler("perf", log), LoggedSampler("py-spy", log)]
    timed_phase(ScriptedDriver(log), Server(), {"requests": []}, 10.0, samplers=samplers,
                noise_meter=QuietNoise, meter=StillMeter())
    after_done = log[log.index("driver says done") + 1:]
    assert after_done[:4] == ["perf halt", "py-spy halt", "perf stop", "py-spy stop"]


def test_a_samplers_window_ends_when_done_is_read_not_when_the_lab_halts_it():
    # a driver writes its report as soon as it has said done, while the lab stops its meter: a
    # profiler whose samples carry their time (JFR) keeps only those up to the moment done was read
    log: list[str] = []
    sampler, meter = LoggedSampler("jfr", log), StillMeter()
    before = time.time()
    timed_phase(ScriptedDriver(log), Server(), {"requests": []}, 10.0, samplers=[sampler],
                noise_meter=QuietNoise, meter=meter)
    assert sampler.done_at is not None, "the sampler was halted without the time done was read"
    assert before <= sampler.done_at <= meter.stopped_at

