"""Loki logs: `/loki/api/v1/query_range` with a LogQL template per node (or job).

    [[logs]]
    type = "loki"
    url = "http://loki:3100"
    tenant = "team-a"            # sent as X-Scope-OrgID (multi-tenant Loki)
    limit = 1000                 # entries per request (Loki refuses more than its max_entries_limit_per_query)
    max_pages = 50               # stop paging there (a fault: later entries not read)
    timeout = "10s"              # one request in all, connect to last byte
    deadline = "60s"             # the whole connector for one attempt, retries and pages included
    retries = 2                  # on 429 and 5xx, exponential backoff, Retry-After honoured, within the deadline
    max_response_bytes = "64MiB" # one answer
    max_bytes = "512MiB"         # the lines kept for one attempt, all queries together
    before = "5m"                # look before the attempt's start / after its end
    [[logs.query]]
    source = "syslog"
    logql = '{host="{node}", unit="kernel"}'
Paging: `direction=forward`; while a page holds `limit` entries, the next
request starts at the last timestamp seen (inclusive, the entries already
returned at that nanosecond are skipped), so nothing is lost past the cap.
A page with more than `limit` entries means the server ignores `limit`:
paging stops there (a fault), the entries read are kept.  Each (query, node)
becomes one observation, lines in time order, labelled `loki:<logql>`; a
query that fails, a limit or the deadline reached is a fault of the
connector and the other queries' lines are kept.  Node names are checked
before they enter LogQL (`rulekit.blueprint.names`).  Reads only.
"""
from __future__ import annotations

from typing import Any

from rulekit.blueprint.connectors.base import LogConnector
from rulekit.blueprint.connectors.http import get_json
from rulekit.blueprint.limits import (MAX_BYTES, MAX_PAGES, MAX_RESPONSE_BYTES, REQUEST_TIMEOUT_S, RETRIES,
                                      DeadlineExceeded)
from rulekit.blueprint.model import Attempt, ConnectorError, pad
from rulekit.blueprint.names import UnsafeName, render_query
from rulekit.inputs.observation import Observation


class LokiLogs(LogConnector):
    TYPE = "loki"
    KEYS = {"type", "name", "url", "tenant", "limit", "max_pages", "timeout", "retries", "before", "after", "query",
            "headers", "max_response_bytes", "max_bytes"}
    QUERY_KEYS = {"source", "logql", "format"}

    def __init__(self, url: str, queries: list[dict[str, str]], tenant: str | None = None, limit: int = 1000,
                 max_pages: int = MAX_PAGES, timeout: float = REQUEST_TIMEOUT_S, retries: int = RETRIES,
                 before: float = 300.0, after: float = 300.0, headers: dict[str, str] | None = None,
                 backoff: float = 0.5, max_response_bytes: int = MAX_RESPONSE_BYTES, max_bytes: int = MAX_BYTES):
        self.url, self.queries, self.tenant, self.limit, self.max_pages = url.rstrip("/"), queries, tenant, limit, max_pages
        self.max_response_bytes, self.max_bytes = max_response_bytes, max_bytes
        self.faults: list[str] = []
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
        durs = {k: sec.duration(k, d) for k, d in (("timeout", f"{REQUEST_TIMEOUT_S:g}s"), ("before", "5m"),
                                                   ("after", "5m"))}
        limit = sec.get("limit", int, 1000)
        if limit < 1:
            sec.error("`limit` must be at least 1", "limit")
        pages = sec.get("max_pages", int, MAX_PAGES)
        if pages < 1:
            sec.error("`max_pages` must be at least 1", "max_pages")
        return cls(url or "", qs, sec.get("tenant", str), max(limit, 1), max(pages, 1),
                   durs["timeout"], sec.get("retries", int, RETRIES), durs["before"], durs["after"],
                   sec.get("headers", dict, {}), max_response_bytes=sec.size("max_response_bytes", MAX_RESPONSE_BYTES),
                   max_bytes=sec.size("max_bytes", MAX_BYTES))

    def collect(self, attempt: Attempt) -> list[Observation]:
        start, end = pad(attempt.start, attempt.end, self.before, self.after)
        out: list[Observation] = []
        self._kept = 0
        failures: list[str] = []
        for q in self.queries:
            nodes = list(attempt.nodes) if "{node}" in q["logql"] else [None]
            for node in nodes:
                try:
                    logql = render_query(q["logql"], attempt, node)
                except UnsafeName as e:
                    self.faults.append(f"{q['source']}: {e}")
                    continue
                try:
                    entries = self.query_range(logql, int(start.timestamp() * 1e9), int(end.timestamp() * 1e9))
                except DeadlineExceeded as e:
                    if not out and not failures:
                        raise  # nothing delivered: the connector failed
                    self.faults += failures + [f"{logql}: {e}; the remaining queries were not run"]
                    return out
                except ConnectorError as e:
                    failures.append(str(e))
                    continue
                if entries:
                    out.append(Observation(source=q["source"], format=q["format"], node=node, label=f"loki:{logql}",
                                           lines=[line for _, line in entries]))
                if self._kept > self.max_bytes:
                    self.faults += failures + [f"more than {self.max_bytes} bytes of lines (`max_bytes`); "
                                               "the remaining queries were not run"]
                    return out
        if failures and not out:  # nothing delivered: the connector failed
            raise ConnectorError(failures[0] + (f" (and {len(failures) - 1} more queries failed)"
                                                if len(failures) > 1 else ""))
        self.faults += failures
        return out

    def query_range(self, logql: str, start_ns: int, end_ns: int) -> list[tuple[int, str]]:
        """Every entry in [start, end], paging past the per-request cap (until `max_pages`,
        `max_bytes`, or a server that ignores `limit`: each a fault, what was read kept)."""
        got: list[tuple[int, str, str]] = []
        boundary: set[tuple[int, str, str]] = set()  # entries already returned at the page's last nanosecond
        cur = start_ns
        kept = getattr(self, "_kept", 0)
        for page in range(self.max_pages):
            try:
                data = get_json(self.url + "/loki/api/v1/query_range",
                                {"query": logql, "start": str(cur), "end": str(end_ns), "limit": str(self.limit),
                                 "direction": "forward"}, self.headers, self.timeout, self.retries, self.backoff,
                                max_bytes=self.max_response_bytes)
            except ConnectorError as e:
                if not got:
                    raise
                self.faults.append(f"{logql}: page {page + 1} failed ({e}); the {len(got)} entries before it are kept")
                break
            batch = self._entries(data, logql)
            n_page = len(batch)
            fresh = [e for e in batch if e not in boundary]
            got += fresh
            kept += sum(len(e[2]) for e in fresh)
            if n_page > self.limit:
                self.faults.append(f"{logql}: the server answered {n_page} entries for `limit` {self.limit} "
                                   "(it ignores `limit`); paging stopped, the entries read are kept")
                break
            if n_page < self.limit:
                break
            if kept > self.max_bytes:
                break  # collect() records it
            if not fresh:  # a full page of one nanosecond we have already seen: cannot advance
                self.notes.append(f"{logql}: more than {self.limit} entries share one timestamp; raise `limit`")
                break
            last = max(e[0] for e in batch)
            boundary = {e for e in batch if e[0] == last} | {e for e in boundary if e[0] == last}
            cur = last
        else:
            self.faults.append(f"{logql}: stopped after {self.max_pages} pages of {self.limit} (`max_pages`); "
                               "later entries not read")
        self._kept = kept
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
