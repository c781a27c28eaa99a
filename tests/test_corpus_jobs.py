"""The corpus's relational reasoning through whole jobs: every case of
bundled_rules/*.test.toml that the corpus owns (cascades.test.toml), the benign
long-run false-positive guard, and the job_parameters collector."""
from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
from pathlib import Path

from rulekit.inputs.jobinfo import JobInfoBuilder
from rulekit.inputs.observation import Observation
from rulekit.engine.session import Session
from rulekit.analysis.testing import attribute_dir, run_job_test

REPO = Path(__file__).resolve().parent.parent
BENIGN = REPO / "examples" / "benign-training"


def _cases(engine):
    return [c for c in engine.job_tests if c.span and Path(c.span.file).name == "cascades.test.toml"]


def test_cascade_cases_are_loaded(bundled):
    assert len(_cases(bundled)) >= 25


def test_cascade_cases_pass(bundled):
    failed = []
    for case in _cases(bundled):
        res = run_job_test(bundled, case)
        if not res.passed:
            failed.append(f"{case.name}: {res.mismatches or res.error} actual={res.actual}")
    assert not failed, "\n".join(failed)


def test_benign_training_has_no_bad_or_interesting_node(bundled):
    result = attribute_dir(bundled, BENIGN)
    assert result["outcome"] == "success"
    assert result["bad_nodes"] == [] and result["interesting_nodes"] == []
    assert [e for e in result["evidence"] if e["event_type"] == "Attribution.node.bad" and e["node"]] == []


def test_benign_training_log_is_generated_and_small(tmp_path):
    copy = tmp_path / "benign"
    shutil.copytree(BENIGN, copy, ignore=shutil.ignore_patterns("applog", "syslog", "__pycache__"))
    subprocess.run([sys.executable, str(copy / "generate.py")], check=True)
    for rel in ["applog/train.log", *(f"syslog/{p.name}" for p in (BENIGN / "syslog").glob("*.log"))]:
        assert filecmp.cmp(copy / rel, BENIGN / rel, shallow=False), f"{rel} differs from generate.py's output"
    size = sum(p.stat().st_size for p in BENIGN.rglob("*.log"))
    assert size <= 2 * 1024 * 1024
    assert sum(1 for _ in (BENIGN / "applog" / "train.log").open()) > 5000


def test_job_parameters_collector(bundled):
    job = JobInfoBuilder("p", None, ("node0001", "node0002"), tasks_per_node=8).build()
    lines = ["node0001:2211:2211 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
             "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |",
             "PyTorch version: 2.3.0+cu121",
             "pyxis: importing docker image: nvcr.io#nvidia/pytorch:24.05-py3",
             "using world size: 16, data-parallel size: 1, context-parallel size: 1, tensor-model-parallel size: 8, "
             "pipeline-model-parallel size: 2",
             "  tensor_model_parallel_size ...................... 8"]
    with Session(bundled, job) as s:
        s.ingest(Observation(source="applog", format="text", lines=lines, label="t"))
        result = s.attribute()
    got = result["collectors"]["job_parameters"]
    assert got["versions"] == {"nccl": ["2.21.5+cuda12.4"], "driver": ["550.54.15"], "cuda": ["12.4"],
                               "torch": ["2.3.0+cu121"], "container_image": ["nvcr.io#nvidia/pytorch:24.05-py3"]}
    assert got["parameters"]["world_size"] == ["16"]
    assert got["parameters"]["tensor_model_parallel_size"] == ["8"]
    assert got["parameters"]["pipeline_model_parallel_size"] == ["2"]
    assert result["bad_nodes"] == []


def test_traceback_event_keeps_first_and_final_exception(bundled):
    """The chained traceback of the python-exception-chain example: one event for the
    chain, naming the KeyError (nearest cause) and keeping the final RuntimeError."""
    lines = (REPO / "examples" / "python-exception-chain" / "applog" / "train.log").read_text().splitlines()
    job = JobInfoBuilder("py", None, ("node0001", "node0002"), tasks_per_node=4).build()
    with Session(bundled, job) as s:
        s.ingest(Observation(source="applog", format="text", lines=lines, label="train.log"))
        result = s.attribute()
        events = [e for e in s.manager.stream(s.context_id).all() if e.rule == "PythonTraceback"]
    assert result["root_cause"]["symptom"] == "PYTHON_EXCEPTION"
    assert len(events) == 1
    f = events[0].fields
    assert (f["exc_type"], f["final_exc_type"], f["chain_len"]) == ("KeyError", "RuntimeError", "2")
    assert events[0].node == "node0002"


def _attribute_case(engine, name):
    from rulekit.analysis.testing import job_from_mapping

    case = next(c for c in engine.job_tests if c.name == name)
    with Session(engine, job_from_mapping(case.job)) as s:
        for o in case.observations:
            s.ingest(Observation(source=o.source, format=o.format, node=o.node, lines=list(o.lines), label="t"))
        return s.attribute()


def test_watchdog_laggard_is_a_suspected_bad_node(bundled):
    """Rank 2 completed less work than its peers of process group 0 and nothing on its
    node says why: it is named (rank and node) as a suspect its peers' evidence blames,
    never a certain bad node; the timed-out ranks are its victims."""
    result = _attribute_case(bundled, "the rank behind in the collective sequence is the suspected laggard")
    assert [(b["node"], b["blame"], b["confidence"]) for b in result["bad_nodes"]] == [("node-02", "peer", "suspected")]
    assert result["root_cause"]["symptom"] == "HANG_LAGGARD_RANK"
    assert result["outcome"] == "unknown" and result["confidence"] == "low"
    found = result["collectors"]["hang_ranks"]["findings"]
    assert [(f["verdict"], f["criterion"], f["ranks"]) for f in found] == [
        ("laggard", "progress", [{"rank": 2, "node": "node-02"}])]
    assert "6461" in found[0]["why"] and "6462" in found[0]["why"]


def test_no_laggard_verdict_when_a_primary_fault_is_known(bundled):
    result = _attribute_case(bundled, "xid79 explains the NCCL timeouts on every other node")
    bad = {s for n in result["bad_nodes"] for s in n["symptoms"]}
    assert not bad & {"HANG_LAGGARD_RANK", "HANG_LAGGARD_WORKLOAD"}
    assert result["root_cause"]["symptom"] == "XID-79-FALLEN_OFF_THE_BUS"


def test_single_ib_status12_report_names_the_peer_as_a_lead_only(bundled):
    """One status-12 report, no host evidence: either end may be at fault, so the
    reporter and the peer its report names (a `bad_peers` IB_REMOTE_PEER_SUSPECT event)
    are both `suspected` bad nodes, never certain (IbStatus12PeerBlame docstring)."""
    job = JobInfoBuilder("ib1", None, ("node0002", "node0003"), tasks_per_node=1).build()
    lines = ["node0002:319733:319733 [1] NCCL INFO Bootstrap : Using ib0:10.0.0.2<0>",
             "node0003:2211:2211 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.3<0>",
             "node0003:2211:2290 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer "
             "10.0.0.2<33092> with error 12, opcode 0, len 0, vendor err 129 (Recv)"]
    with Session(bundled, job) as s:
        s.ingest(Observation(source="applog", format="text", lines=lines, label="t"))
        result = s.attribute()
        leads = [e for e in s.manager.stream(s.context_id).all() if e.symptom == "IB_REMOTE_PEER_SUSPECT"]
    assert result["root_cause"]["symptom"] == "NCCL_IB_RETRY_EXCEEDED"
    assert [(n["node"], n["blame"], n["confidence"]) for n in result["bad_nodes"]] == [
        ("node0003", "peer", "suspected"), ("node0002", "peer", "suspected")]
    assert result["bad_nodes"][1]["named_by"] == ["node0003"]
    assert [(e.node, e.event_type) for e in leads] == [("node0002", "Attribution.node.bad_peers")]
    assert result["confidence"] == "medium"
