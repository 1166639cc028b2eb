"""The server side of a run: the bench server's process (bench), nginx as the reference server,
the control port of the lab's helper processes, how a server writes an answer, and what the
runner needs of any server side (side: its endpoint, its CPU, its counters)."""
