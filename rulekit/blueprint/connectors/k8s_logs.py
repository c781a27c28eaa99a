"""Kubernetes pod logs: the workload's pods, each container's log, and the
previous container's log after a restart.

    [[logs]]
    type = "kubernetes"
    url = "https://k8s.example:6443"
    token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token"   # optional
    namespace = "{namespace}"                       # default: the attempt's namespace
    selector = "batch.kubernetes.io/job-name={job_name}"   # label selector of the workload's pods
    source = "applog"
    timeout = "10s"                                 # one request in all
    deadline = "60s"                                # every pod's logs for one attempt
    max_response_bytes = "64MiB"                    # one log: its last bytes are kept
Pods come from `GET /api/v1/namespaces/{ns}/pods?labelSelector=...` (or the
pod names a Kueue attempt already carries); logs from `.../pods/{pod}/log?
container=C` and, when `restartCount > 0`, `&previous=true` first (read
oldest first).  A missing previous log is a note.  Each log is one
observation on the pod's node, labelled `pod/<ns>/<pod>/<container>`.  The
namespace and pod names enter the URL percent-encoded, the selector's values
are checked (`rulekit.blueprint.names`); a log longer than the cap, a list
cut short or the deadline reached is a fault, the logs read are kept.
"""
from __future__ import annotations

from typing import Any

from rulekit.blueprint.connectors.base import LogConnector
from rulekit.blueprint.connectors.k8s_api import KubeClient
from rulekit.blueprint.limits import MAX_RESPONSE_BYTES, REQUEST_TIMEOUT_S, RETRIES, DeadlineExceeded
from rulekit.blueprint.model import Attempt, ConnectorError, render
from rulekit.blueprint.names import UnsafeName, render_query, url_segment
from rulekit.inputs.observation import Observation


class KubernetesPodLogs(LogConnector):
    TYPE = "kubernetes"
    KEYS = {"type", "name", "url", "token_file", "namespace", "selector", "source", "timeout", "retries",
            "max_response_bytes"}

    def __init__(self, url: str, namespace: str = "{namespace}", selector: str = "batch.kubernetes.io/job-name={job_name}",
                 source: str = "applog", token_file: str | None = None, timeout: float = REQUEST_TIMEOUT_S,
                 retries: int = RETRIES, backoff: float = 0.5, max_response_bytes: int = MAX_RESPONSE_BYTES):
        self.url, self.namespace, self.selector, self.source = url, namespace, selector, source
        self.token_file, self.timeout, self.retries, self.backoff = token_file, timeout, retries, backoff
        self.max_response_bytes = max_response_bytes
        self.notes: list[str] = []
        self.faults: list[str] = []

    @classmethod
    def from_config(cls, sec: Any) -> "KubernetesPodLogs":
        t = sec.duration("timeout", f"{REQUEST_TIMEOUT_S:g}s")
        tf = sec.get("token_file", str)
        return cls(sec.get("url", str, "", required=True), sec.get("namespace", str, "{namespace}"),
                   sec.get("selector", str, "batch.kubernetes.io/job-name={job_name}"), sec.get("source", str, "applog"),
                   str(sec.base / tf) if tf else None, t, sec.get("retries", int, RETRIES),
                   max_response_bytes=sec.size("max_response_bytes", MAX_RESPONSE_BYTES))

    def collect(self, attempt: Attempt) -> list[Observation]:
        ns_name = render(self.namespace, attempt)
        if not ns_name:
            raise ConnectorError("no namespace: set `namespace` or use an execution context that knows it (kueue)")
        ns = url_segment(ns_name, "namespace")
        api = KubeClient(self.url, self.token_file, self.timeout, self.retries, backoff=self.backoff,
                         max_response_bytes=self.max_response_bytes)
        pods = api.list(f"/api/v1/namespaces/{ns}/pods", {"labelSelector": render_query(self.selector, attempt)})
        out: list[Observation] = []
        try:
            self._logs(api, ns, ns_name, pods, out)
        except DeadlineExceeded as e:
            if not out:
                raise  # nothing delivered: the connector failed
            self.faults.append(f"{e}; the remaining logs were not read")
        finally:
            self.faults += api.faults
        if pods and not out and not self.faults:
            raise ConnectorError(f"{len(pods)} pod(s) found but no log could be read")
        return out

    def _logs(self, api: KubeClient, ns: str, ns_name: str, pods: list[dict[str, Any]], out: list[Observation]) -> None:
        for pod in sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("name"))):
            name = str((pod.get("metadata") or {}).get("name") or "")
            try:
                seg = url_segment(name, "pod name")
            except UnsafeName as e:
                self.faults.append(str(e))
                continue
            node = (pod.get("spec") or {}).get("nodeName")
            statuses = {c.get("name"): c for c in (pod.get("status") or {}).get("containerStatuses") or []}
            for c in (pod.get("spec") or {}).get("containers") or []:
                cname = c.get("name")
                base = f"/api/v1/namespaces/{ns}/pods/{seg}/log"
                if ((statuses.get(cname) or {}).get("restartCount") or 0) > 0:
                    try:
                        prev = api.text(base, {"container": cname, "previous": "true"})
                        out.append(Observation(source=self.source, node=node,
                                               label=f"pod/{ns_name}/{name}/{cname}(previous)", lines=prev.splitlines()))
                    except DeadlineExceeded:
                        raise
                    except ConnectorError as e:
                        self.notes.append(f"{name}/{cname}: previous log unavailable ({e})")
                try:
                    text = api.text(base, {"container": cname})
                except DeadlineExceeded:
                    raise
                except ConnectorError as e:
                    self.notes.append(f"{name}/{cname}: log unavailable ({e})")
                    continue
                out.append(Observation(source=self.source, node=node, label=f"pod/{ns_name}/{name}/{cname}",
                                       lines=text.splitlines()))
