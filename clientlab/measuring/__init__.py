"""Measuring a driver's process from the outside: its CPU, memory and wake-ups (measure, procfs,
cgroup), where it runs (affinity), what else the machine did meanwhile (noise, hostprobe), the
limits and warm-up rules a cell runs under, the machine a run happened on, and the one measuring
run per machine (runlock)."""
