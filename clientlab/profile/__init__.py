"""CPU profiles of cells, in layers, and the differential that names a slow cell's code paths.

    tools.py       the profilers, installed on first use (perf, py-spy, rbspy, excimer, NYTProf; pinned)
    samplers.py    a profiler attached to a driver's process tree for a trial's timed phase
    folded.py      folded stacks: the one format every profiler's output becomes
    rules.py       layer rules as data (rules/<language>.toml, rules/common.toml), the classifier
    layers.py      a profile's samples → each layer's share and µs a request
    profiled.py    the runner's hook: a cell's profiled trials, stored apart from its figures
    differential.py  two cells' profiles compared per request: the paths that make the difference
    causes.py      known slow paths (rules/causes.toml) and the CPU findings of a run
    flame.py       flame graphs and differential graphs as self-contained HTML
    text.py        a profile as text (show --cell … --profile)
"""

from clientlab.profile.model import LAYERS, Layers, LayerShare
from clientlab.profile.profiled import KIND, CellProfiler

__all__ = ["KIND", "LAYERS", "CellProfiler", "LayerShare", "Layers"]
