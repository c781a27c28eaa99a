"""The Service's Prometheus metrics (the official `prometheus_client`), served at `GET /metrics`.

    rulekit_attributions_total{outcome}          attributions answered (one-shot and the cycle's)
    rulekit_rule_fires_total{rule}               attributions whose evidence a rule produced
    rulekit_attribution_duration_seconds         time of one attribute call (histogram)

Labels are of low cardinality: an outcome (eight words) or a rule of the loaded
corpus; never a job id or a node.  One registry per app; with several worker
processes (`rulekit serve --workers N` sets `PROMETHEUS_MULTIPROC_DIR` before
they start) every worker writes its values to that folder and `/metrics`
answers the sum over the workers (`prometheus_client.multiprocess`).  Knows no
HTTP beyond the exposition's bytes and content type.
"""
from __future__ import annotations

import os
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class ServiceMetrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.attributions = Counter("rulekit_attributions_total", "Attributions answered, by outcome", ["outcome"],
                                    registry=self.registry)
        self.rule_fires = Counter("rulekit_rule_fires_total", "Attributions whose evidence a rule produced, by rule",
                                  ["rule"], registry=self.registry)
        self.duration = Histogram("rulekit_attribution_duration_seconds", "Time to attribute one job",
                                  buckets=BUCKETS, registry=self.registry)

    def observe(self, result: dict[str, Any], seconds: float) -> None:
        """Count one attribution's result."""
        self.attributions.labels(str(result.get("outcome") or "unknown")).inc()
        for rule in sorted({e.get("rule") for e in result.get("evidence") or [] if e.get("rule")}):
            self.rule_fires.labels(str(rule)).inc()
        self.duration.observe(max(0.0, seconds))

    def exposition(self) -> bytes:
        if os.environ.get(MULTIPROC_ENV):
            from prometheus_client import multiprocess

            reg = CollectorRegistry()
            multiprocess.MultiProcessCollector(reg)
            return generate_latest(reg)
        return generate_latest(self.registry)
