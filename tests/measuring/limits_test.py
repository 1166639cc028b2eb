"""limits: what the lab raises for a run is raised before and put back after."""

from __future__ import annotations

import resource

from clientlab.measuring import limits


def test_the_lab_s_descriptor_limit_is_raised_for_every_live_cell_and_put_back():
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = (256, before[1])
    resource.setrlimit(resource.RLIMIT_NOFILE, low)
    try:
        lifted = limits.lift_for_cells(400)
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = 400 * limits.FDS_PER_CELL + limits.SPARE_FDS
        assert soft >= min(want, before[1]) and "nofile" in lifted.changed
        lifted.restore()
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == low
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, before[1]), before[1]))
        assert limits.lift_for_cells(3).changed == {}  # a few cells need no more than a usual limit
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, before)
