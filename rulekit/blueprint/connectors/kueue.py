"""Kueue execution context: Workload objects (kueue.x-k8s.io/v1beta1) through the
Kubernetes API.

    [[context]]
    type = "kueue"
    url = "https://k8s.example:6443"
    token_file = "token"                 # optional bearer token
    namespace = "research"               # optional: default all namespaces
    pod_selector = "batch.kubernetes.io/job-name={job_name}"
    timeout = "10s"                      # one request in all
    deadline = "60s"                     # the whole listing
One attempt per finished or evicted Workload (pending and running ones are
skipped): `Finished` True with reason `Succeeded` -> COMPLETED, other reasons
-> FAILED; else `Evicted` True with reason `Preempted` (or a `Preempted`
condition) and other eviction reasons -> CANCELLED (as in
examples/kueue-preempted: the bundled Kueue rules read the conditions, and a
PREEMPTED state would name Slurm), `InactiveWorkload`/`Deactivated` also
with an execution_cancellation.  `extra.reason` keeps Kueue's reason.  start = the
`Admitted` (or `QuotaReserved`) transition, end = the deciding transition;
the attempt number is `status.requeueState.count`; nodes are the pods'
`spec.nodeName`.  The conditions travel as JSON lines of a `kueue:<ns>/<name>`
applog observation, the shape the bundled rules read.  Reads only.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from rulekit.blueprint.connectors.base import ContextConnector
from rulekit.blueprint.connectors.k8s_api import KubeClient
from rulekit.blueprint.limits import MAX_RESPONSE_BYTES, REQUEST_TIMEOUT_S, RETRIES, DeadlineExceeded
from rulekit.blueprint.model import Attempt, ConnectorError, Window, as_datetime
from rulekit.blueprint.names import render_query, url_segment

API = "/apis/kueue.x-k8s.io/v1beta1"
CANCEL_REASONS = {"InactiveWorkload", "Deactivated"}


def _cond(w: dict[str, Any], typ: str) -> dict[str, Any] | None:
    for c in (w.get("status") or {}).get("conditions") or []:
        if c.get("type") == typ and c.get("status") == "True":
            return c
    return None


class KueueContext(ContextConnector):
    TYPE = "kueue"
    KEYS = {"type", "name", "url", "token_file", "namespace", "pod_selector", "timeout", "retries",
            "max_response_bytes"}

    def __init__(self, url: str, namespace: str | None = None, pod_selector: str = "batch.kubernetes.io/job-name={job_name}",
                 token_file: str | None = None, timeout: float = REQUEST_TIMEOUT_S, retries: int = RETRIES,
                 backoff: float = 0.5, max_response_bytes: int = MAX_RESPONSE_BYTES):
        self.max_response_bytes = max_response_bytes
        self.faults: list[str] = []
        self.url, self.namespace, self.pod_selector = url, namespace, pod_selector
        self.token_file, self.timeout, self.retries, self.backoff = token_file, timeout, retries, backoff
        self.notes: list[str] = []

    @classmethod
    def from_config(cls, sec: Any) -> "KueueContext":
        t = sec.duration("timeout", f"{REQUEST_TIMEOUT_S:g}s")
        tf = sec.get("token_file", str)
        return cls(sec.get("url", str, "", required=True), sec.get("namespace", str),
                   sec.get("pod_selector", str, "batch.kubernetes.io/job-name={job_name}"),
                   str(sec.base / tf) if tf else None, t, sec.get("retries", int, RETRIES),
                   max_response_bytes=sec.size("max_response_bytes", MAX_RESPONSE_BYTES))

    def attempts(self, window: Window, job_id: str | None = None) -> Iterable[Attempt]:
        api = KubeClient(self.url, self.token_file, self.timeout, self.retries, backoff=self.backoff,
                         max_response_bytes=self.max_response_bytes)
        path = f"{API}/namespaces/{url_segment(self.namespace)}/workloads" if self.namespace else f"{API}/workloads"
        out = []
        try:
            return self._attempts(api, path, window, job_id, out)
        except DeadlineExceeded as e:
            if not out:
                raise
            self.faults.append(f"{e}; the workloads after {len(out)} were not read")
            return out
        finally:
            self.faults += api.faults

    def _attempts(self, api: KubeClient, path: str, window: Window, job_id: str | None, out: list[Attempt]) -> list[Attempt]:
        for w in api.list(path):
            a = self.attempt(w)
            if a is None or (job_id is not None and job_id not in (a.job_id, a.extra.get("workload"))):
                continue
            if not window.contains(a):
                continue
            try:
                sel = render_query(self.pod_selector, a)
                pods = api.list(f"/api/v1/namespaces/{url_segment(str(a.extra['namespace']), 'namespace')}/pods",
                                {"labelSelector": sel})
            except DeadlineExceeded:
                raise
            except ConnectorError as e:
                self.notes.append(f"{a.job_id}: pods not listed ({e})")
                pods = []
            nodes = sorted({p.get("spec", {}).get("nodeName") for p in pods if p.get("spec", {}).get("nodeName")})
            a.nodes = tuple(nodes)
            a.extra["pods"] = sorted(p["metadata"]["name"] for p in pods)
            out.append(a)
        return out

    def attempt(self, w: dict[str, Any]) -> Attempt | None:
        md = w.get("metadata") or {}
        ns, name = md.get("namespace", "default"), md.get("name")
        if not name:
            raise ConnectorError("a Workload without metadata.name")
        owner = next((o.get("name") for o in md.get("ownerReferences") or [] if o.get("name")), None)
        fin, ev, pre = _cond(w, "Finished"), _cond(w, "Evicted"), _cond(w, "Preempted")
        cancel = None
        if fin:
            state, decided = ("COMPLETED" if fin.get("reason") == "Succeeded" else "FAILED"), fin
        elif ev or pre:
            decided = ev or pre
            reason = (ev or {}).get("reason")
            state = "CANCELLED"
            if reason in CANCEL_REASONS and not pre:
                cancel = decided
        else:
            return None  # pending or running
        adm = _cond(w, "Admitted") or _cond(w, "QuotaReserved")
        try:
            start = as_datetime(adm.get("lastTransitionTime")) if adm else None
            end = as_datetime(decided.get("lastTransitionTime"))  # type: ignore[union-attr]
        except ValueError as e:
            raise ConnectorError(f"Workload {ns}/{name}: {e}") from None
        jid = f"{ns}/{owner or name}"
        a = Attempt(job_id=jid, attempt=int(((w.get("status") or {}).get("requeueState") or {}).get("count") or 0),
                    start=start, end=end, state=state, name=owner or name, source="kueue",
                    extra={"namespace": ns, "workload": name, "queue": (w.get("spec") or {}).get("queueName"),
                           "reason": decided.get("reason")})
        if cancel is not None and end is not None:
            a.execution_cancellation = {"record_id": jid, "cancelled_by": f"kueue:{cancel.get('reason')}",
                                        "source_time": end.isoformat()}
        conds = [{k: c.get(k) for k in ("type", "status", "reason", "message")}
                 for c in (w.get("status") or {}).get("conditions") or []]
        a.extra["observations"] = [{"source": "applog", "label": f"kueue:{ns}/{name}",
                                    "lines": [json.dumps(c, separators=(",", ":")) for c in conds]}]
        return a
