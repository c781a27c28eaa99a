"""Loki, Kubernetes pod logs and Kueue connectors against HTTP fakes on 127.0.0.1
(`tests/http_fakes.py`: Loki and the Kubernetes API cannot run on these machines;
the fakes answer as the official API documents say: streams and paging past
the entry cap, X-Scope-OrgID, 429 and 5xx, list paging with `continue`,
`previous` logs, Status errors)."""
from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from http_fakes import FakeKubernetes, FakeLoki  # noqa: E402

from rulekit.blueprint.config import load_config  # noqa: E402
from rulekit.blueprint.connectors.k8s_logs import KubernetesPodLogs  # noqa: E402
from rulekit.blueprint.connectors.kueue import KueueContext  # noqa: E402
from rulekit.blueprint.connectors.loki import LokiLogs  # noqa: E402
from rulekit.blueprint.model import Attempt, ConnectorError, Window  # noqa: E402
from rulekit.blueprint.orchestrator import Attributor, run  # noqa: E402

T0 = 1780282800  # 2026-06-01T03:00:00Z
NS = 1_000_000_000
XID = ("Jun  1 03:12:40 node-02 kernel: [ 5860.118900] NVRM: Xid (PCI:0008:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 "
       "Link 08 (0x004505c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)")


def _attempt(nodes=("node-01", "node-02")) -> Attempt:
    return Attempt("train-0142", 0, tuple(nodes), datetime.fromtimestamp(T0, timezone.utc),
                   datetime.fromtimestamp(T0 + 1800, timezone.utc), state="FAILED", tasks_per_node=8)


def _streams():
    n2 = [((T0 + i) * NS, f"Jun  1 03:00:{i:02d} node-02 systemd[1]: tick {i}") for i in range(10)]
    n2.append(((T0 + 760) * NS, XID))
    # two entries in one nanosecond straddling a page boundary must both arrive
    n2 += [((T0 + 770) * NS, "Jun  1 03:12:50 node-02 a"), ((T0 + 770) * NS, "Jun  1 03:12:50 node-02 b")]
    n1 = [((T0 + 5) * NS, "Jun  1 03:00:05 node-01 systemd[1]: hello")]
    return [({"host": "node-02", "unit": "kernel"}, n2), ({"host": "node-01", "unit": "kernel"}, n1),
            ({"host": "node-09", "unit": "kernel"}, [((T0 + 1) * NS, "other job")])]


def test_loki_pages_past_the_cap_with_tenant_header():
    with FakeLoki(_streams(), tenant="team-a", max_entries=4) as loki:
        c = LokiLogs(loki.url, [{"source": "syslog", "logql": '{host="{node}", unit="kernel"}', "format": "text"}],
                     tenant="team-a", limit=4, backoff=0.01)
        obs = c.collect(_attempt())
        by = {o.node: o for o in obs}
        assert set(by) == {"node-01", "node-02"}
        lines = list(by["node-02"].lines)
        assert len(lines) == 13 and lines[10] == XID and lines[11:] == ["Jun  1 03:12:50 node-02 a",
                                                                        "Jun  1 03:12:50 node-02 b"] or \
            sorted(lines[11:]) == ["Jun  1 03:12:50 node-02 a", "Jun  1 03:12:50 node-02 b"]
        n2_reqs = [r for r in loki.requests if "node-02" in r["query"]["query"]]
        assert len(n2_reqs) >= 4  # 13 entries, 4 a page
        assert all(r["headers"].get("x-scope-orgid") == "team-a" for r in loki.requests)
        assert all(r["query"]["direction"] == "forward" for r in loki.requests)
        assert by["node-02"].label == 'loki:{host="node-02", unit="kernel"}'


def test_loki_retries_429_and_5xx_then_succeeds():
    with FakeLoki(_streams(), tenant=None) as loki:
        loki.faults = [(429, 0), (503, 0), (429, 0)]
        c = LokiLogs(loki.url, [{"source": "syslog", "logql": '{host="node-01"}', "format": "text"}], retries=3,
                     backoff=0.01)
        obs = c.collect(_attempt())
        assert [o.lines for o in obs] == [["Jun  1 03:00:05 node-01 systemd[1]: hello"]]
        assert len(loki.requests) == 4


def test_loki_errors_are_connector_errors():
    with FakeLoki(_streams(), tenant="team-a", max_entries=10) as loki:
        no_tenant = LokiLogs(loki.url, [{"source": "syslog", "logql": '{host="node-01"}', "format": "text"}],
                             retries=0)
        with pytest.raises(ConnectorError, match="401.*no org id"):
            no_tenant.collect(_attempt())
        too_many = LokiLogs(loki.url, [{"source": "syslog", "logql": '{host="node-01"}', "format": "text"}],
                            tenant="team-a", limit=5000, retries=0)
        with pytest.raises(ConnectorError, match="max entries limit"):
            too_many.collect(_attempt())
        loki.faults = [(429, 0)] * 5
        limited = LokiLogs(loki.url, [{"source": "syslog", "logql": '{host="node-01"}', "format": "text"}],
                           tenant="team-a", retries=2, backoff=0.01)
        with pytest.raises(ConnectorError, match="429"):
            limited.collect(_attempt())
        loki.faults = [(0, 3.0)]
        slow = LokiLogs(loki.url, [{"source": "syslog", "logql": '{host="node-01"}', "format": "text"}],
                        tenant="team-a", timeout=0.5, retries=0)
        with pytest.raises(ConnectorError, match="unreachable|timed out|did not answer"):
            slow.collect(_attempt())


def test_loki_down_is_recorded_and_local_evidence_still_attributes(tmp_path, bundled):
    """The walk-through with Loki as the syslog source, then with Loki down."""
    repo = Path(__file__).resolve().parent.parent
    ev = repo / "examples" / "blueprint" / "static" / "evidence"
    with FakeLoki(_streams(), tenant="team-a") as loki:
        (tmp_path / "bp.toml").write_text(f"""
[[context]]
type = "static"
[[context.job]]
id = "train-0142"
state = "FAILED"
nodes = ["node-01", "node-02", "node-03", "node-04"]
tasks_per_node = 8
start = 2026-06-01T03:00:00Z
end = 2026-06-01T03:31:10Z
[[logs]]
type = "local"
root = "{ev / '{job_id}'}"
[[logs.files]]
source = "applog"
glob = "applog/*.log"
[[logs]]
type = "loki"
name = "loki"
url = "{loki.url}"
tenant = "team-a"
retries = 1
[[logs.query]]
source = "syslog"
logql = '{{host="{{node}}", unit="kernel"}}'
""")
        cfg = load_config(tmp_path)
        out = []

        class O:
            def write(self, r): out.append(r)
            def close(self): pass

        run(cfg, Attributor(engine=bundled), [O()])
        v = out[0]["verdict"]
        assert v["outcome"] == "hardware" and v["bad_nodes"][0]["node"] == "node-02"
        xid = [e for e in v["evidence"] if e["symptom"] == "XID-149-NVLINK_SIGNAL_INTEGRITY"][0]
        assert xid["source"].startswith("loki:") and xid["line_num"] == 11
        cfg.logs[1].url = "http://127.0.0.1:9"  # nothing listens there
        cfg.logs[1].backoff = 0.01
        out.clear()
        run(cfg, Attributor(engine=bundled), [O()])
        r = out[0]
        cov = {c["collector"]: c for c in r["coverage"]["collectors"]}
        assert cov["loki"]["status"] == "failed" and "unreachable" in cov["loki"]["error"]
        assert r["verdict"]["evidence_complete"] is False and r["verdict"]["outcome"] != "hardware"


def _pod(name, node, restarts=0, job="llama"):
    return {"metadata": {"name": name, "namespace": "research", "labels": {"batch.kubernetes.io/job-name": job}},
            "spec": {"nodeName": node, "containers": [{"name": "trainer"}]},
            "status": {"containerStatuses": [{"name": "trainer", "restartCount": restarts}]}}


def test_pod_logs_with_previous_container_and_paging():
    pods = [_pod("llama-0", "gpu-node-1", restarts=1), _pod("llama-1", "gpu-node-2"), _pod("llama-2", "gpu-node-3"),
            _pod("other-0", "gpu-node-9", job="other")]
    logs = {("research", "llama-0", "trainer", True): "old run: CUDA error: out of memory\n",
            ("research", "llama-0", "trainer", False): "new run line\n",
            ("research", "llama-1", "trainer", False): "rank 8 ok\n"}
    with FakeKubernetes(pods=pods, logs=logs, token="s3cret") as k8s:
        tok = Path(__file__).parent / "artifacts"
        tok.mkdir(exist_ok=True)
        (tok / "token").write_text("s3cret\n")
        c = KubernetesPodLogs(k8s.url, namespace="research", selector="batch.kubernetes.io/job-name={job_name}",
                              token_file=str(tok / "token"), backoff=0.01)
        a = _attempt()
        a.name = "llama"
        from rulekit.blueprint.connectors import k8s_api
        obs = c.collect(a)
        assert [(o.label, o.node) for o in obs] == [
            ("pod/research/llama-0/trainer(previous)", "gpu-node-1"), ("pod/research/llama-0/trainer", "gpu-node-1"),
            ("pod/research/llama-1/trainer", "gpu-node-2")]
        assert obs[0].lines == ["old run: CUDA error: out of memory"]
        notes = c.take_notes()
        assert any("llama-2" in n and "not found" in n for n in notes)
        assert all(r["headers"].get("authorization") == "Bearer s3cret" for r in k8s.requests)
        assert k8s_api  # the client module is the one under test
        bad = KubernetesPodLogs(k8s.url, namespace="research", retries=0)
        with pytest.raises(ConnectorError, match="401"):
            bad.collect(a)


def _workload(name, owner, conds, requeues=0, ns="research"):
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": name, "namespace": ns, "ownerReferences": [{"kind": "Job", "name": owner}]},
            "spec": {"queueName": "user-queue"},
            "status": {"conditions": [{"type": t, "status": "True", "reason": r, "message": m,
                                       "lastTransitionTime": ts} for t, r, m, ts in conds],
                       **({"requeueState": {"count": requeues}} if requeues else {})}}


WORKLOADS = [
    _workload("job-llama-1", "llama", [("Admitted", "Admitted", "admitted", "2026-08-11T04:00:00Z"),
                                       ("Evicted", "Preempted", "Preempted to accommodate a workload (UID: 5f1c) due "
                                        "to prioritization in the ClusterQueue", "2026-08-11T04:12:00Z")], requeues=1),
    _workload("job-ok-1", "ok", [("Admitted", "Admitted", "", "2026-08-11T03:00:00Z"),
                                 ("Finished", "Succeeded", "Job finished successfully", "2026-08-11T03:30:00Z")]),
    _workload("job-bad-1", "bad", [("Admitted", "Admitted", "", "2026-08-11T03:00:00Z"),
                                   ("Finished", "Failed", "Job has reached the specified backoff limit",
                                    "2026-08-11T03:10:00Z")]),
    _workload("job-off-1", "off", [("Admitted", "Admitted", "", "2026-08-11T03:00:00Z"),
                                   ("Evicted", "InactiveWorkload", "The workload is deactivated", "2026-08-11T03:05:00Z")]),
    _workload("job-run-1", "run", [("Admitted", "Admitted", "", "2026-08-11T03:00:00Z")]),
]


def test_kueue_workloads_to_attempts():
    pods = [_pod("llama-0", "gpu-node-1"), _pod("llama-1", "gpu-node-2")]
    with FakeKubernetes(workloads=WORKLOADS, pods=pods) as k8s:
        ctx = KueueContext(k8s.url, backoff=0.01)
        ctx_page = KueueContext(k8s.url, backoff=0.01)
        atts = {a.job_id: a for a in ctx_page.attempts(Window())}
        assert set(atts) == {"research/llama", "research/ok", "research/bad", "research/off"}
        pre = atts["research/llama"]
        assert pre.state == "CANCELLED" and pre.extra["reason"] == "Preempted" and pre.attempt == 1 and pre.nodes == ("gpu-node-1", "gpu-node-2")
        assert pre.end == datetime(2026, 8, 11, 4, 12, tzinfo=timezone.utc)
        assert atts["research/ok"].state == "COMPLETED" and atts["research/bad"].state == "FAILED"
        off = atts["research/off"]
        assert off.state == "CANCELLED" and off.execution_cancellation["cancelled_by"] == "kueue:InactiveWorkload"
        lines = pre.extra["observations"][0]["lines"]
        assert json.loads(lines[1])["reason"] == "Preempted"
        # the list was paged (the fake pages by 2 when asked): limit/continue round trips happened
        ctx.__class__  # noqa: B018
        wl_reqs = [r for r in k8s.requests if r["path"].endswith("/workloads")]
        assert wl_reqs and all("limit" in r["query"] for r in wl_reqs)


def test_kueue_paging_with_continue():
    with FakeKubernetes(workloads=WORKLOADS) as k8s:
        from rulekit.blueprint.connectors.k8s_api import KubeClient

        items = KubeClient(k8s.url, page=2, backoff=0.01).list("/apis/kueue.x-k8s.io/v1beta1/workloads")
        assert [w["metadata"]["name"] for w in items] == [w["metadata"]["name"] for w in WORKLOADS]
        conts = [r["query"].get("continue") for r in k8s.requests]
        assert conts == [None, "2", "4"]


def test_kueue_preemption_attributes_as_policy(bundled):
    with FakeKubernetes(workloads=WORKLOADS[:1], pods=[_pod("llama-0", "gpu-node-1")]) as k8s:
        from rulekit.blueprint.config import BlueprintConfig

        cfg = BlueprintConfig(contexts=[KueueContext(k8s.url, backoff=0.01)])
        cfg.contexts[0].name = "kueue"
        out = []

        class O:
            def write(self, r): out.append(r)
            def close(self): pass

        run(cfg, Attributor(engine=bundled), [O()])
        r = out[0]
        assert r["context"]["state"] == "CANCELLED"
        # policy, not a fault (a one-node job's bad_nodes listing is the diagnosis contract's to settle)
        assert r["verdict"]["outcome"] == "cancelled" and r["verdict"]["root_cause"]["symptom"] == "KUEUE_EVICTED"
        assert r["coverage"]["collectors"][0] == {**r["coverage"]["collectors"][0], "kind": "context", "type": "kueue",
                                                  "observations": 1}
