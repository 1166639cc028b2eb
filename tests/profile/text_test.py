"""What a cell's layers are, said wherever they are shown: µs a request of the profiled trials,
the profiler's own cost in them, beside the timed trials' figure."""

from __future__ import annotations

from clientlab.profile import text
from clientlab.profile.causes import layers_line
from clientlab.profile.model import LAYERS


def _cell(cpu_overhead: float | None) -> dict:
    # 30 µs a request in the profiled trials: 20 library, 10 kernel
    shares = [{"layer": layer, "us_per_request": {"library": 20.0, "kernel": 10.0}.get(layer, 0.0),
               "share": {"library": 2 / 3, "kernel": 1 / 3}.get(layer, 0.0)} for layer in LAYERS]
    return {"id": 1, "driver": "c-libcurl", "scenario": "get-small",
            "figures": {"layers": {"profiler": "perf", "samples": 900, "overhead": 0.2, "shares": shares},
                        "profile": {"trials": 3, "requests": 3000, "cpu_overhead": cpu_overhead}}}


def test_the_text_view_says_the_layers_are_the_profiled_trials_with_the_profilers_cost_and_gives_the_timed_cpu(store):
    shown = text.render(store, _cell(cpu_overhead=0.5))
    assert "CPU a request in the profiled trials, the profiler's own cost included:" in shown
    # 30 µs profiled at +50 % CPU: the timed trials' 20 µs
    assert "30.0 µs (the timed trials, the cell's figure: 20.0 µs); by layer:" in shown
    assert all(len(line) <= text.WIDTH for line in shown.splitlines())


def test_without_the_profilers_cpu_cost_the_text_view_still_says_whose_cpu_the_layers_are(store):
    shown = text.render(store, _cell(cpu_overhead=None))
    assert "the profiler's own cost included:" in shown
    assert "  30.0 µs; by layer:" in shown


def test_the_findings_and_flame_graphs_layer_line_names_the_profiled_trials():
    assert layers_line(_cell(0.5)).startswith("where the CPU went in the profiled trials (the profiler's cost included): "
                                              "library 20 µs, kernel 10 µs")


def test_the_text_view_says_how_many_of_py_spys_samples_split_the_cpu_outside_the_kernel(store):
    from clientlab.store.profiles import add_profile

    run_id = store.start_run({}, {})
    cell = {**_cell(cpu_overhead=0.5), "driver": "python-pycurl",
            "id": store.start_cell(run_id, "python-pycurl", "get-small", {}, "requests")}
    cell["figures"]["layers"]["profiler"] = "perf+py-spy"
    gets = "main (drivers/python/_lib/labdriver.py);PycurlDriver._gets (drivers/python/pycurl/driver.py)"
    # py-spy samples wall time: of 400, the driver was at user code in 4, the rest in send()
    spy = f"{gets} 4\n{gets};send (libc.so.6) 396\n"
    add_profile(store, cell["id"], "perf", "python3 (process);tcp_sendmsg (kernel) 900\n", 900, {})
    add_profile(store, cell["id"], "py-spy", spy, 400, {"folder": "drivers/python/pycurl"})
    shown = text.render(store, cell)
    # the kernel's third from perf, the rest split by 4 samples: one is 16.7 points
    assert "split by py-spy's 4 samples outside a system call (of its 400): one is 16.7 points" in shown.replace("\n      ", " ")
    assert all(len(line) <= text.WIDTH for line in shown.splitlines())
