"""Job records and evidence readers: `JobInfo` and its builder, `Observation`,
and the job-directory reader (job.toml, applog/, syslog/, observations.jsonl).

Reads and validates input; runs no rules.  May import the core, `extract` and
`rules`; must not import `engine` or anything above it.
"""
