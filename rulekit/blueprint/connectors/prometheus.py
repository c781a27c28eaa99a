"""Prometheus metrics: `/api/v1/query_range` with a PromQL template per node.

    [[metrics]]
    type = "prometheus"
    url = "http://127.0.0.1:9090"
    step = "30s"
    timeout = "10s"                  # one request in all (Prometheus is asked to stop at this too)
    deadline = "60s"                 # all queries of one attempt
    max_response_bytes = "64MiB"     # one answer
    before = "10m"                   # look back before the attempt's start
    [[metrics.query]]
    name = "gpu_temp"
    promql = 'DCGM_FI_DEV_GPU_TEMP{Hostname="{node}"}'   # {node}: one query per node
Answers are `matrix` results (`{metric, values [[t, "v"], ...]}`); each series
becomes a metric series (node, name, labels, samples).  An error status
(400/422/503, `status: error`) or a malformed answer fails that query: a
fault, the other queries' series are kept (the connector fails when none
answered).  `warnings` become notes.  Node names are checked before they
enter PromQL (`rulekit.blueprint.names`).  Reads only.
"""
from __future__ import annotations

import math
from typing import Any

from rulekit.blueprint.connectors.base import MetricConnector
from rulekit.blueprint.connectors.http import get_json
from rulekit.blueprint.limits import MAX_RESPONSE_BYTES, REQUEST_TIMEOUT_S, RETRIES, DeadlineExceeded
from rulekit.blueprint.metrics_shape import make_series
from rulekit.blueprint.model import Attempt, ConnectorError, pad, parse_duration
from rulekit.blueprint.names import UnsafeName, render_query

NODE_LABELS = ("node", "Hostname", "hostname", "host", "instance", "nodename")


class PrometheusMetrics(MetricConnector):
    TYPE = "prometheus"
    KEYS = {"type", "name", "url", "step", "timeout", "before", "after", "query", "retries", "headers",
            "max_response_bytes"}
    QUERY_KEYS = {"name", "promql"}

    def __init__(self, url: str, queries: list[dict[str, str]], step: float = 30.0, timeout: float = REQUEST_TIMEOUT_S,
                 before: float = 600.0, after: float = 60.0, retries: int = RETRIES,
                 headers: dict[str, str] | None = None, max_response_bytes: int = MAX_RESPONSE_BYTES,
                 backoff: float = 0.5):
        self.url, self.queries, self.step, self.timeout = url.rstrip("/"), queries, step, timeout
        self.before, self.after, self.retries, self.headers = before, after, retries, headers or {}
        self.max_response_bytes, self.backoff = max_response_bytes, backoff
        self.notes: list[str] = []
        self.faults: list[str] = []

    @classmethod
    def from_config(cls, sec: Any) -> "PrometheusMetrics":
        url = sec.get("url", str, None, required=True)
        qs = []
        for s in sec.subs("query", required=True):
            n, q = s.get("name", str, None, required=True), s.get("promql", str, None, required=True)
            s.check_unknown(cls.QUERY_KEYS)
            if n and q:
                qs.append({"name": n, "promql": q})
        durs = {}
        for k, d in (("step", "30s"), ("timeout", f"{REQUEST_TIMEOUT_S:g}s"), ("before", "10m"), ("after", "1m")):
            v = sec.get(k, (str, int, float), d)
            try:
                durs[k] = parse_duration(v)
            except ValueError as e:
                sec.error(str(e), k)
                durs[k] = parse_duration(d)
        return cls(url or "", qs, durs["step"], durs["timeout"], durs["before"], durs["after"],
                   sec.get("retries", int, RETRIES), sec.get("headers", dict, {}),
                   sec.size("max_response_bytes", MAX_RESPONSE_BYTES))

    def collect(self, attempt: Attempt) -> list[Any]:
        start, end = pad(attempt.start, attempt.end, self.before, self.after)
        out: list[Any] = []
        failures: list[str] = []
        answered = 0
        for q in self.queries:
            nodes = list(attempt.nodes) if "{node}" in q["promql"] else [None]
            for node in nodes:
                try:
                    promql = render_query(q["promql"], attempt, node)
                    # the server stops at its own timeout; this client's deadline is a little longer
                    data = get_json(self.url + "/api/v1/query_range", {
                        "query": promql, "start": f"{start.timestamp():.3f}", "end": f"{end.timestamp():.3f}",
                        "step": f"{self.step:g}", "timeout": f"{self.timeout:g}s"}, self.headers, self.timeout + 1,
                        self.retries, self.backoff, max_bytes=self.max_response_bytes)
                    out += self._series(data, q["name"], node, promql)
                    answered += 1
                except DeadlineExceeded as e:
                    if not answered and not failures:
                        raise  # nothing delivered: the connector failed
                    self.faults += failures + [f"{e}; the remaining queries were not run"]
                    return out
                except UnsafeName as e:
                    self.faults.append(f"{q['name']}: {e}")
                except ConnectorError as e:
                    failures.append(str(e))
        if failures and not answered:
            raise ConnectorError(failures[0] + (f" (and {len(failures) - 1} more queries failed)"
                                                if len(failures) > 1 else ""))
        self.faults += failures
        return out

    def _series(self, data: Any, name: str, node: str | None, promql: str) -> list[Any]:
        if not isinstance(data, dict) or data.get("status") != "success":
            err = data.get("error") if isinstance(data, dict) else None
            raise ConnectorError(f"Prometheus query {promql!r} failed: {err or 'malformed answer'}")
        for w in data.get("warnings") or []:
            self.notes.append(f"{name}: {w}")
        d = data.get("data") or {}
        if d.get("resultType") != "matrix" or not isinstance(d.get("result"), list):
            raise ConnectorError(f"Prometheus query {promql!r}: expected a matrix, got {d.get('resultType')!r}")
        out = []
        for r in d["result"]:
            labels = {str(k): str(v) for k, v in (r.get("metric") or {}).items()}
            samples = []
            for pair in r.get("values") or []:
                try:
                    t, v = float(pair[0]), float(pair[1])
                except (TypeError, ValueError, IndexError):
                    raise ConnectorError(f"Prometheus query {promql!r}: malformed sample {pair!r}") from None
                if not math.isnan(v):
                    samples.append((t, v))
            n = node or next((labels[k].split(":")[0] for k in NODE_LABELS if k in labels), None)
            out.append(make_series(n, name, labels, samples))
        return out
