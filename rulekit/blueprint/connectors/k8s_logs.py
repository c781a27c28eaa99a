"""Kubernetes pod logs: the workload's pods, each container's log, and the
previous container's log after a restart.

    [[logs]]
    type = "kubernetes"
    url = "https://k8s.example:6443"
    token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token"   # optional
    namespace = "{namespace}"                       # default: the attempt's namespace
    selector = "batch.kubernetes.io/job-name={job_name}"   # label selector of the workload's pods
    source = "applog"
    timeout = "30s"
Pods come from `GET /api/v1/namespaces/{ns}/pods?labelSelector=...` (or the
pod names a Kueue attempt already carries); logs from `.../pods/{pod}/log?
container=C` and, when `restartCount > 0`, `&previous=true` first (read
oldest first).  A missing previous log is a note.  Each log is one
observation on the pod's node, labelled `pod/<ns>/<pod>/<container>`.
"""
from __future__ import annotations

from typing import Any

from rulekit.blueprint.connectors.base import LogConnector
from rulekit.blueprint.connectors.k8s_api import KubeClient
from rulekit.blueprint.model import Attempt, ConnectorError, render
from rulekit.inputs.observation import Observation


class KubernetesPodLogs(LogConnector):
    TYPE = "kubernetes"
    KEYS = {"type", "name", "url", "token_file", "namespace", "selector", "source", "timeout", "retries"}

    def __init__(self, url: str, namespace: str = "{namespace}", selector: str = "batch.kubernetes.io/job-name={job_name}",
                 source: str = "applog", token_file: str | None = None, timeout: float = 30.0, retries: int = 3,
                 backoff: float = 0.5):
        self.url, self.namespace, self.selector, self.source = url, namespace, selector, source
        self.token_file, self.timeout, self.retries, self.backoff = token_file, timeout, retries, backoff
        self.notes: list[str] = []

    @classmethod
    def from_config(cls, sec: Any) -> "KubernetesPodLogs":
        t = sec.duration("timeout", "30s")
        tf = sec.get("token_file", str)
        return cls(sec.get("url", str, "", required=True), sec.get("namespace", str, "{namespace}"),
                   sec.get("selector", str, "batch.kubernetes.io/job-name={job_name}"), sec.get("source", str, "applog"),
                   str(sec.base / tf) if tf else None, t, sec.get("retries", int, 3))

    def collect(self, attempt: Attempt) -> list[Observation]:
        ns = render(self.namespace, attempt)
        if not ns:
            raise ConnectorError("no namespace: set `namespace` or use an execution context that knows it (kueue)")
        api = KubeClient(self.url, self.token_file, self.timeout, self.retries, backoff=self.backoff)
        pods = api.list(f"/api/v1/namespaces/{ns}/pods", {"labelSelector": render(self.selector, attempt)})
        out: list[Observation] = []
        for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
            name = pod["metadata"]["name"]
            node = (pod.get("spec") or {}).get("nodeName")
            statuses = {c.get("name"): c for c in (pod.get("status") or {}).get("containerStatuses") or []}
            for c in (pod.get("spec") or {}).get("containers") or []:
                cname = c.get("name")
                base = f"/api/v1/namespaces/{ns}/pods/{name}/log"
                if (statuses.get(cname) or {}).get("restartCount", 0) > 0:
                    try:
                        prev = api.text(base, {"container": cname, "previous": "true"})
                        out.append(Observation(source=self.source, node=node, label=f"pod/{ns}/{name}/{cname}(previous)",
                                               lines=prev.splitlines()))
                    except ConnectorError as e:
                        self.notes.append(f"{name}/{cname}: previous log unavailable ({e})")
                try:
                    text = api.text(base, {"container": cname})
                except ConnectorError as e:
                    self.notes.append(f"{name}/{cname}: log unavailable ({e})")
                    continue
                out.append(Observation(source=self.source, node=node, label=f"pod/{ns}/{name}/{cname}",
                                       lines=text.splitlines()))
        if pods and not out:
            raise ConnectorError(f"{len(pods)} pod(s) found but no log could be read")
        return out
