"""The Blueprint: the reference orchestrator around the engine.

It discovers workload attempts through execution-context connectors (static,
Slurm, Kueue), gathers each attempt's evidence through log connectors (local
files, Loki, Kubernetes pod logs) and metric connectors (Prometheus), runs the
engine (embedded `Session`, or a running Service over HTTP), enriches the
verdict with the attempt and the collector coverage, writes an
AttributionBlueprintResult to outputs (stdout JSON lines, SQLite) and serves a
read-only dashboard over the SQLite store.

It must not import `rulekit.executors`, `rulekit.cli` or the public faces;
it builds on `service/`, `analysis/`, `engine/`, `inputs/`, `rules/` and core.
"""
