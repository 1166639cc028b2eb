"""What the lab's tests share: fixtures (the real bench server, a scratch store, the test drivers),
the command line in real processes (cli), and property-based fuzzing of the file loaders (fuzz)."""

from pathlib import Path

TESTDRIVERS = Path(__file__).resolve().parent.parent / "testdrivers"
