"""Whether two runs' cells asked for the same work, as compare's notes say it."""

from clientlab.analysis.compare import named


def test_a_parameter_stored_as_null_is_the_same_as_one_left_out():
    before = {"count": 2000, "client": {"keep_alive": True, "options": {}}}
    after = {"count": 2000, "client": {"keep_alive": True, "timeout_s": None, "options": {}}}
    assert named(before) == named(after)


def test_a_parameter_with_a_value_still_makes_the_cells_unlike():
    before = {"count": 2000, "client": {"keep_alive": True}}
    after = {"count": 2000, "client": {"keep_alive": True, "timeout_s": 120}}
    assert named(before) != named(after)
