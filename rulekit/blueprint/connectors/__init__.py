"""Connectors: one module each, behind the small interfaces of `base.py`.

Execution context (which attempts exist): `static`, `slurm`, `kueue`.
Logs (observations of an attempt): `local`, `loki`, `kubernetes`.
Metrics (metric series of an attempt): `prometheus`.
Outputs (where results go): `stdout`, `sqlite`.

A user's own connector is a class with the same methods, named in a config
file as `type = "package.module:Class"`.  Connectors must not import the
orchestrator, the dashboard or the CLI.
"""

BUILTIN = {
    "context": {"static": ("rulekit.blueprint.connectors.static", "StaticContext"),
                "slurm": ("rulekit.blueprint.connectors.slurm", "SlurmContext"),
                "kueue": ("rulekit.blueprint.connectors.kueue", "KueueContext")},
    "logs": {"local": ("rulekit.blueprint.connectors.local_logs", "LocalLogs"),
             "loki": ("rulekit.blueprint.connectors.loki", "LokiLogs"),
             "kubernetes": ("rulekit.blueprint.connectors.k8s_logs", "KubernetesPodLogs")},
    "metrics": {"prometheus": ("rulekit.blueprint.connectors.prometheus", "PrometheusMetrics")},
}
