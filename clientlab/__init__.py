"""clientlab: the HTTP client lab.

Benchmarks HTTP client libraries against an instrumented bench server, verifies that each
client did the work right, and measures wall time, CPU and peak memory from the outside.
"""

__version__ = "0.1.0"
