"""Connectors: one module each, behind the small interfaces of `base.py`.

Execution context (which attempts exist): `static`, `slurm`.
Logs (observations of an attempt): `local`.
Metrics (metric series of an attempt): `prometheus`.
Outputs (where results go): `stdout`, `sqlite`.

A user's own connector is a class with the same methods, named in a config
file as `type = "package.module:Class"`.  (Kueue, Loki and Kubernetes pod
logs are not built yet: see docs/blueprint.md.)  Connectors must not import the
orchestrator, the dashboard or the CLI.
"""

BUILTIN = {
    "context": {"static": ("rulekit.blueprint.connectors.static", "StaticContext"),
                "slurm": ("rulekit.blueprint.connectors.slurm", "SlurmContext")},
    "logs": {"local": ("rulekit.blueprint.connectors.local_logs", "LocalLogs")},
    "metrics": {"prometheus": ("rulekit.blueprint.connectors.prometheus", "PrometheusMetrics")},
}
