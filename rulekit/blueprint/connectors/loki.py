"""Loki logs: `/loki/api/v1/query_range` with a LogQL template per node (or job).

    [[logs]]
    type = "loki"
    url = "http://loki:3100"
    tenant = "team-a"            # sent as X-Scope-OrgID (multi-tenant Loki)
    limit = 1000                 # entries per request (Loki refuses more than its max_entries_limit_per_query)
    max_pages = 200              # stop paging there, with a note
    timeout = "30s"
    retries = 3                  # on 429 and 5xx, exponential backoff, Retry-After honoured
    before = "5m"                # look before the attempt's start / after its end
    [[logs.query]]
    source = "syslog"
    logql = '{host="{node}", unit="kernel"}'
Paging: `direction=forward`; while a page holds `limit` entries, the next
request starts at the last timestamp seen (inclusive, the entries already
returned at that nanosecond are skipped), so nothing is lost past the cap.
Each (query, node) becomes one observation, lines in time order, labelled
`loki:<logql>`.  Reads only.
"""
from __future__ import annotations

from typing import Any

from rulekit.blueprint.connectors.base import LogConnector
from rulekit.blueprint.connectors.http import get_json
from rulekit.blueprint.model import Attempt, ConnectorError, pad, render
from rulekit.inputs.observation import Observation


class LokiLogs(LogConnector):
    TYPE = "loki"
    KEYS = {"type", "name", "url", "tenant", "limit", "max_pages", "timeout", "retries", "before", "after", "query",
            "headers"}
    QUERY_KEYS = {"source", "logql", "format"}

    def __init__(self, url: str, queries: list[dict[str, str]], tenant: str | None = None, limit: int = 1000,
                 max_pages: int = 200, timeout: float = 30.0, retries: int = 3, before: float = 300.0,
                 after: float = 300.0, headers: dict[str, str] | None = None, backoff: float = 0.5):
        self.url, self.queries, self.tenant, self.limit, self.max_pages = url.rstrip("/"), queries, tenant, limit, max_pages
        self.timeout, self.retries, self.before, self.after = timeout, retries, before, after
        self.headers = dict(headers or {})
        if tenant:
            self.headers["X-Scope-OrgID"] = tenant
        self.backoff = backoff
        self.notes: list[str] = []

    @classmethod
    def from_config(cls, sec: Any) -> "LokiLogs":
        url = sec.get("url", str, None, required=True)
        qs = []
        for s in sec.subs("query", required=True):
            src, q = s.get("source", str, None, required=True), s.get("logql", str, None, required=True)
            fmt = s.get("format", str, "text")
            s.check_unknown(cls.QUERY_KEYS)
            if src and q:
                qs.append({"source": src, "logql": q, "format": fmt})
        durs = {k: sec.duration(k, d) for k, d in (("timeout", "30s"), ("before", "5m"), ("after", "5m"))}
        limit = sec.get("limit", int, 1000)
        if limit < 1:
            sec.error("`limit` must be at least 1", "limit")
        return cls(url or "", qs, sec.get("tenant", str), max(limit, 1), sec.get("max_pages", int, 200),
                   durs["timeout"], sec.get("retries", int, 3), durs["before"], durs["after"], sec.get("headers", dict, {}))

    def collect(self, attempt: Attempt) -> list[Observation]:
        start, end = pad(attempt.start, attempt.end, self.before, self.after)
        out: list[Observation] = []
        for q in self.queries:
            targets = [(render(q["logql"], attempt, n), n) for n in attempt.nodes] if "{node}" in q["logql"] \
                else [(render(q["logql"], attempt), None)]
            for logql, node in targets:
                entries = self.query_range(logql, int(start.timestamp() * 1e9), int(end.timestamp() * 1e9))
                if entries:
                    out.append(Observation(source=q["source"], format=q["format"], node=node, label=f"loki:{logql}",
                                           lines=[line for _, line in entries]))
        return out

    def query_range(self, logql: str, start_ns: int, end_ns: int) -> list[tuple[int, str]]:
        """Every entry in [start, end], paging past the per-request cap."""
        got: list[tuple[int, str, str]] = []
        boundary: set[tuple[int, str, str]] = set()  # entries already returned at the page's last nanosecond
        cur = start_ns
        for page in range(self.max_pages):
            data = get_json(self.url + "/loki/api/v1/query_range",
                            {"query": logql, "start": str(cur), "end": str(end_ns), "limit": str(self.limit),
                             "direction": "forward"}, self.headers, self.timeout, self.retries, self.backoff)
            batch = self._entries(data, logql)
            n_page = len(batch)
            fresh = [e for e in batch if e not in boundary]
            got += fresh
            if n_page < self.limit:
                break
            if not fresh:  # a full page of one nanosecond we have already seen: cannot advance
                self.notes.append(f"{logql}: more than {self.limit} entries share one timestamp; raise `limit`")
                break
            last = max(e[0] for e in batch)
            boundary = {e for e in batch if e[0] == last} | {e for e in boundary if e[0] == last}
            cur = last
        else:
            self.notes.append(f"{logql}: stopped after {self.max_pages} pages of {self.limit}; later entries not read")
        got.sort(key=lambda e: e[0])
        return [(t, line) for t, _, line in got]

    @staticmethod
    def _entries(data: Any, logql: str) -> list[tuple[int, str, str]]:
        if not isinstance(data, dict) or data.get("status") != "success":
            err = data.get("error") if isinstance(data, dict) else None
            raise ConnectorError(f"Loki query {logql!r} failed: {err or 'malformed answer'}")
        d = data.get("data") or {}
        if d.get("resultType") != "streams" or not isinstance(d.get("result"), list):
            raise ConnectorError(f"Loki query {logql!r}: expected streams, got {d.get('resultType')!r}")
        out = []
        for s in d["result"]:
            labels = ",".join(f"{k}={v}" for k, v in sorted((s.get("stream") or {}).items()))
            for pair in s.get("values") or []:
                try:
                    out.append((int(pair[0]), labels, str(pair[1])))
                except (TypeError, ValueError, IndexError):
                    raise ConnectorError(f"Loki query {logql!r}: malformed entry {pair!r}") from None
        return out
