"""Running cells (driver × scenario): verification first, then warm-up and timed trials.

    options.py     RunOptions: how cells run (one value a command builds, every part reads)
    placement.py   which core the lab, the server and the driver run on
    session.py     a measuring run's context: placement, stored run, SIGTERM, run_matrix
    cellrunner.py  CellRunner: the cells of a run taking turns, trial by trial
    deadline.py    when the time given to a group of cells ends
    cell.py        a cell as data: what it is, its process, what its trials gave, its figures
    prepare.py     a cell's set-up, each step once: readiness, verification's job, capabilities
    pool.py        the driver processes: started, kept warm, shared, forked, paused, stopped
    trial.py       one trial: job, go, done, measured and checked against the server's record
    warming.py     warm-up until a process is warm, and the count fitted to the trial budget
    timed.py       a cell's turn at a timed trial, and when its timed trials are done
"""

from clientlab.runner.cell import Beside, CellGroup, CellResult, Events, SilentEvents
from clientlab.runner.cellrunner import CellRunner
from clientlab.runner.deadline import Deadline
from clientlab.runner.options import INTERLEAVES, JIT_WARM_S, PLACEMENTS, RunOptions
from clientlab.runner.placement import Placement, pick_cpus
from clientlab.runner.session import (
    LabRun,
    lab_run,
    loopback_config,
    run_matrix,
    stop_on_sigterm,
    stored_run,
)
from clientlab.runner.trial import Phase, Unsupported, timed_phase

__all__ = [
    "INTERLEAVES", "JIT_WARM_S", "PLACEMENTS", "Beside", "CellGroup", "CellResult", "CellRunner", "Deadline",
    "Events", "LabRun", "Phase", "Placement", "RunOptions", "SilentEvents", "Unsupported", "lab_run",
    "loopback_config", "pick_cpus", "run_matrix", "stop_on_sigterm", "stored_run",
    "timed_phase",
]
