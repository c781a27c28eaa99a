"""Job records and evidence readers: the one job-record schema (`jobrecord`),
`JobInfo` and its builder, `Observation`, `MetricSeries`, and the job-directory
reader (job.toml, applog/, syslog/, observations.jsonl).

Reads and validates input; runs no rules.  May import the core, `extract` and
`rules`; must not import `engine` or anything above it.
"""
