# The lab's shared test fixtures (the real bench server, a scratch store, the test drivers),
# for the tests under clientlab/ and drivers/.
pytest_plugins = ["clientlab.testsupport"]
