"""Named experiments (experiments/*.toml): the seed articles' workloads, their claims, the verdicts.

- spec:      the experiment file format, validated on load
- plan:      an experiment expanded into cells (driver × scenario × variant) per network
- execute:   running those cells into one stored run
- verdict:   each claim judged against the run's numbers
- findings:  the findings document (docs/findings.md), generated from stored runs
"""
