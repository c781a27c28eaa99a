"""The extraction fast path: RE2 patterns, literal keys, the acceleration
structure (one scanner per source and format) and per-line context (rank,
host, timestamp), and the on-disk cache of derived data (`diskcache`).

Turns bytes into (line, pattern index, captures).  Knows nothing of rules,
events or jobs: it imports only the core (`rulekit.diagnostics`,
`rulekit.codes`, `rulekit.config`) and must not import any other group.
"""
