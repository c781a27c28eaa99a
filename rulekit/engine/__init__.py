"""Attribution of one job: the SQLite event store, the five phases
(extraction, filter, refinement, outcome/collect, report), refinement state and
the `Session` ingest/attribute cycle; `jobrun.attribute_dir` runs a Session
over a job directory.

May import the core, `extract`, `rules` and `inputs`; must not import
`analysis`, `service`, `blueprint` or `cli`.
"""
