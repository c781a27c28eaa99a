"""HTTP fakes on 127.0.0.1 for the servers that cannot run here (Grafana Loki, the
Kubernetes API with Kueue).  Their answers follow the official API documents:

Loki `GET /loki/api/v1/query_range` (query, start/end in ns, limit default 100,
direction default backward): `{"status": "success", "data": {"resultType":
"streams", "result": [{"stream": {...}, "values": [["<ns>", "<line>"]]}]}}`;
start inclusive, end exclusive; a request whose limit exceeds the server's
`max_entries_limit_per_query` is a 400; multi-tenant without `X-Scope-OrgID`
is a 401 `no org id`; rate limiting is a 429.

Kubernetes: list endpoints answer `{"kind": "...List", "apiVersion",
"metadata": {"continue": "..."}, "items": [...]}` and page with `limit` /
`continue`; pod logs are `text/plain` at `/api/v1/namespaces/{ns}/pods/{pod}/log`
with `container` and `previous`; errors are `Status` objects
`{"kind": "Status", "status": "Failure", "message", "reason", "code"}`.

`faults` lets a test make the next N requests answer 429 / 500 or stall.
"""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


class Fake:
    def __init__(self):
        self.requests: list[dict[str, Any]] = []
        self.faults: list[tuple[int, float]] = []  # (status or 0 for a stall, seconds)
        self.server: ThreadingHTTPServer | None = None

    def handle(self, method: str, path: str, q: dict[str, str], headers: Any) -> tuple[int, str, Any, dict]:
        raise NotImplementedError

    def __enter__(self) -> "Fake":
        fake = self

        class H(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                u = urlparse(self.path)
                q = {k: v[-1] for k, v in parse_qs(u.query).items()}
                fake.requests.append({"path": u.path, "query": q, "headers": {k.lower(): v for k, v in self.headers.items()}})
                if fake.faults:
                    status, secs = fake.faults.pop(0)
                    if status == 0:
                        time.sleep(secs)
                    else:
                        self._send(status, "application/json" if status != 429 else "text/plain",
                                   "Too Many Requests" if status == 429 else json.dumps({"error": "internal"}),
                                   {"Retry-After": str(secs)} if status == 429 else {})
                        return
                status, ctype, body, extra = fake.handle("GET", u.path, q, self.headers)
                self._send(status, ctype, body if isinstance(body, str) else json.dumps(body), extra)

            def _send(self, status, ctype, text, extra):
                data = text.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in extra.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc: Any) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()


_SEL = re.compile(r'(\w+)\s*=\s*"([^"]*)"')


class FakeLoki(Fake):
    """streams: [({labels}, [(ns, line), ...]), ...]"""

    def __init__(self, streams, tenant: str | None = "team-a", max_entries: int = 1000):
        super().__init__()
        self.streams, self.tenant, self.max_entries = streams, tenant, max_entries

    def handle(self, method, path, q, headers):
        if path != "/loki/api/v1/query_range":
            return 404, "text/plain", "404 page not found\n", {}
        if self.tenant and headers.get("X-Scope-OrgID") != self.tenant:
            return 401, "text/plain", "no org id\n", {}
        try:
            limit = int(q.get("limit", "100"))
            start, end = int(q["start"]), int(q["end"])
        except (KeyError, ValueError):
            return 400, "text/plain", "invalid parameters\n", {}
        if limit > self.max_entries:
            return 400, "text/plain", (f"max entries limit per query exceeded, limit > max_entries_limit "
                                       f"({limit} > {self.max_entries})\n"), {}
        want = dict(_SEL.findall(q.get("query", "")))
        if not q.get("query", "").startswith("{") or not want:
            return 400, "text/plain", "parse error : queries require at least one regexp or equality matcher\n", {}
        entries = []
        for labels, values in self.streams:
            if all(labels.get(k) == v for k, v in want.items()):
                entries += [(ts, line, labels) for ts, line in values if start <= ts < end]
        backward = q.get("direction", "backward") == "backward"
        entries.sort(key=lambda e: e[0], reverse=backward)
        entries = entries[:limit]
        result: dict[str, dict] = {}
        for ts, line, labels in entries:
            k = json.dumps(labels, sort_keys=True)
            result.setdefault(k, {"stream": labels, "values": []})["values"].append([str(ts), line])
        return 200, "application/json", {"status": "success", "data": {"resultType": "streams",
                                                                       "result": list(result.values()),
                                                                       "stats": {}}}, {}


class FakeKubernetes(Fake):
    """workloads: Kueue Workload objects; pods: Pod objects; logs: {(ns, pod, container, previous): text}."""

    def __init__(self, workloads=(), pods=(), logs=None, page: int = 2, token: str | None = None):
        super().__init__()
        self.workloads, self.pods, self.logs, self.page, self.token = list(workloads), list(pods), logs or {}, page, token

    @staticmethod
    def status(code: int, reason: str, message: str):
        return code, "application/json", {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                          "message": message, "reason": reason, "code": code}, {}

    def _list(self, kind: str, items: list, q: dict) -> tuple:
        limit = int(q.get("limit", "0") or 0) or len(items) or 1
        offset = int(q.get("continue", "0") or 0)
        chunk = items[offset:offset + limit]
        cont = str(offset + limit) if offset + limit < len(items) else ""
        return 200, "application/json", {"kind": kind, "apiVersion": "v1",
                                         "metadata": {"resourceVersion": "1", **({"continue": cont} if cont else {})},
                                         "items": chunk}, {}

    def handle(self, method, path, q, headers):
        if self.token and headers.get("Authorization") != f"Bearer {self.token}":
            return self.status(401, "Unauthorized", "Unauthorized")
        m = re.fullmatch(r"/apis/kueue\.x-k8s\.io/v1beta1(?:/namespaces/([^/]+))?/workloads", path)
        if m:
            ns = m.group(1)
            return self._list("WorkloadList", [w for w in self.workloads
                                               if ns is None or w["metadata"]["namespace"] == ns], q)
        m = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods", path)
        if m:
            sel = dict(p.split("=", 1) for p in q.get("labelSelector", "").split(",") if "=" in p)
            pods = [p for p in self.pods if p["metadata"]["namespace"] == m.group(1)
                    and all(p["metadata"].get("labels", {}).get(k) == v for k, v in sel.items())]
            return self._list("PodList", pods, q)
        m = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/log", path)
        if m:
            key = (m.group(1), m.group(2), q.get("container"), q.get("previous") == "true")
            if key not in self.logs:
                if key[3]:
                    return self.status(400, "BadRequest", f'previous terminated container "{key[2]}" in pod '
                                                          f'"{key[1]}" not found')
                return self.status(404, "NotFound", f'pods "{key[1]}" not found')
            return 200, "text/plain", self.logs[key], {}
        return self.status(404, "NotFound", "the server could not find the requested resource")
