"""Job records and evidence readers: the one job-record schema (`jobrecord`; its
field rules in `jobrecord_rules`, its pydantic models in `jobrecord_model`, the
metric wire form's in `metrics_model`),
`JobInfo` and its builder, `Observation`, `MetricSeries`, the job-directory
reader (job.toml, applog/, syslog/, fr/, observations.jsonl), and PyTorch
flight-recorder dumps (`flight_recorder`: the safe reader; `fr_analysis`: the
pure cross-rank matching the bundled flight-recorder rules call).

Reads, validates and analyses input data; runs no rules.  May import the core, `extract` and
`rules`; must not import `engine` or anything above it.
"""
