# The lab's shared test fixtures (the real bench server, a scratch store, the test drivers),
# for the tests under tests/ and drivers/.
pytest_plugins = ["tests.support.fixtures"]


def pytest_collection_modifyitems(items):
    """Tests bound to one worker (xdist_group: the network lab, one per machine) first: they run
    one after another, so they would set the length of the parallel pass if they started late."""
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)
