"""The blame contract of the result (DESIGN "Attribution result", REFERENCE §8,
docs/blame.md): only node / link / peer blame puts a node in `bad_nodes`; no
example, job test or real-world case whose outcome is application, timeout,
cancelled or success blames a node; actions and confidence come from symptom
metadata and Xid 154."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from rulekit import JobInfoBuilder, Observation, Session
from rulekit.analysis.testing import find_examples, job_from_mapping
from rulekit.engine.blame import xid154_action
from rulekit.engine.jobrun import attribute_dir
from rulekit.rules.model import BLAMES, NODE_BLAMES

ROOT = Path(__file__).resolve().parent.parent
NO_FAULT = ("application", "timeout", "cancelled", "success")


def _run_case(engine, job: dict, observations) -> dict:
    with Session(engine, job_from_mapping(job)) as s:
        for o in observations:
            s.ingest(Observation(source=o.source, node=o.node, format=o.format, lines=list(o.lines), label="case"))
        return s.attribute()


def test_every_bundled_symptom_resolves_a_blame(bundled):
    reg = bundled.registry
    names = sorted(reg._by_name)
    assert len(names) > 200
    missing = [n for n in names if reg.info(n).blame not in BLAMES]
    assert missing == []


@pytest.mark.parametrize("name,blame,action", [
    ("XID-79-FALLEN_OFF_THE_BUS", "node", "reboot"),  # NVIDIA: RESTART_BM
    ("XID-48-GPU_ECC_DBE", "node", "reset_gpu"),  # the XID- prefix default
    ("XID-64-DRAM_RETIREMENT_FAILURE", "node", "drain_and_rma"),
    ("XID-13-GR_EXCEPTION", "workload", "none"),  # application-class: no family action inherited
    ("XID-31-MMU_ERR_FLT", "workload", "none"),
    ("GPU_XID_REPEATED_SAME_GPU", "node", "inspect"),  # ... unless repeated on the same GPU
    ("IB_LINK_DOWN", "link", "check_link"),
    ("NCCL_WATCHDOG_TIMEOUT", "none", "none"),
    ("NCCL_IB_WR_FLUSH", "none", "none"),
    ("NCCL_SHM_NO_SPACE", "environment", "none"),
    ("SLURM_TIMEOUT", "scheduler", "none"),
    ("IB_REMOTE_PEER_UNREACHABLE", "peer", "inspect"),
])
def test_blame_and_action_per_reference(bundled, name, blame, action):
    info = bundled.registry.info(name)
    assert (info.blame, info.action) == (blame, action)


@pytest.mark.parametrize("line,action", [
    ("NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
     "drain_and_reset"),
    ("NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
     "reset_gpu"),
    ("NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to "
     "0x2 (Node Reboot Required)", "reboot"),
    ("NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)", "drain_p2p"),
    ("NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x4 (Drain and Reset) to 0x0 (None)", None),
    ("NVRM: Xid (PCI:0008:01:00): 48, pid=1, name=python, An uncorrectable double bit error", None),
])
def test_xid154_printed_action(line, action):
    assert xid154_action(line) == action


def test_xid154_action_overrides_the_symptoms_action(bundled):
    r = attribute_dir(bundled, ROOT / "examples" / "xid149-nvlink")
    (b,) = r["bad_nodes"]
    assert (b["node"], b["blame"], b["confidence"]) == ("node-02", "node", "certain")
    assert bundled.registry.info("XID-149-NVLINK_SIGNAL_INTEGRITY").action == "reset_gpu"
    assert b["action"] == "drain_and_reset" and b["action_from"] == "XID-154-RECOVERY_ACTION_CHANGED"
    # one action per node: the root cause on node-02 says what node-02's entry says
    rc = r["root_cause"]
    assert (rc["node"], rc["action"], rc["action_from"]) == ("node-02", "drain_and_reset",
                                                              "XID-154-RECOVERY_ACTION_CHANGED")


def test_a_root_on_no_bad_node_keeps_its_symptoms_action(bundled):
    """A workload root (no bad node) keeps its symptom's own action and no `action_from`."""
    r = attribute_dir(bundled, ROOT / "examples" / "cuda-oom")
    assert r["bad_nodes"] == [] and r["root_cause"] is not None
    assert r["root_cause"]["action"] == bundled.registry.info(r["root_cause"]["symptom"]).action
    assert "action_from" not in r["root_cause"]


def _attribute_applog(engine, job, lines: list[str]) -> tuple[dict, list]:
    """Attribute one application log (`lines`) of `job`: the result and the stream's events."""
    with Session(engine, job) as s:
        s.ingest(Observation(source="applog", lines=lines, label="train.log"))
        r = s.attribute()
        return r, list(s.manager.stream(s.context_id).all())


def test_a_node_only_peers_blame_is_suspected(bundled):
    """Two survivors name node0002 in IB status-12 reports: it is the bad node, but
    `suspected` until its own logs agree; the reporters are not blamed."""
    r = attribute_dir(bundled, ROOT / "examples" / "ib-status12-peers")
    assert [(b["node"], b["blame"], b["confidence"]) for b in r["bad_nodes"]] == [("node0002", "peer", "suspected")]
    assert r["confidence"] == "medium"


def test_closed_connection_naming_a_host_emits_bad_peers(bundled):
    job = JobInfoBuilder("peers", "FAILED", ("node0001", "node0002", "node0007"), tasks_per_node=1).build()
    lines = ["node0001:1234:1300 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer "
             "node0007<45678>",
             "node0002:1234:1300 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer "
             "node0007<45679>"]
    r, events = _attribute_applog(bundled, job, lines)
    peers = [e for e in events if e.event_type.endswith(".bad_peers")]
    assert sorted((e.node, e.fields["reporter"]) for e in peers) == [("node0007", "node0001"), ("node0007", "node0002")]
    assert r["outcome"] == "network"
    assert [(b["node"], b["confidence"], b["named_by"]) for b in r["bad_nodes"]] == [
        ("node0007", "suspected", ["node0001", "node0002"])]
    assert sorted(a["node"] for a in r["affected_nodes"]) == ["node0001", "node0002"]


def test_peers_named_in_an_application_failure_are_not_blamed(bundled):
    """A rank's CUDA OOM kills it; its peers report the closed connection: nobody is a bad node."""
    job = JobInfoBuilder("oom", "FAILED", ("node0001", "node0002"), tasks_per_node=1).build()
    lines = ["[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
             "capacity of 79.10 GiB of which 1.00 GiB is free.",
             "node0001:1234:1300 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer "
             "node0002<45678>"]
    r, _ = _attribute_applog(bundled, job, lines)
    assert r["outcome"] == "application" and r["bad_nodes"] == []
    assert "node0002" in [a["node"] for a in r["affected_nodes"]]


def test_weak_evidence_gives_the_best_outcome_with_low_confidence(bundled):
    """A SIGABRT (says nothing about the cause) outranks a plain `exitcode: 1` (a Python
    error): the outcome is application with confidence low, the SIGABRT an alternative."""
    job = JobInfoBuilder("weak", "FAILED", ("node0001",), tasks_per_node=8).build()
    lines = ["E0813 08:21:22.980000 1245483 torch/distributed/elastic/multiprocessing/api.py:984] failed "
             "(exitcode: -6) local_rank: 6 (pid: 1246013) of binary: /usr/bin/python3",
             "E0813 08:21:22.990000 1245483 torch/distributed/elastic/multiprocessing/api.py:984] failed "
             "(exitcode: 1) local_rank: 2 (pid: 1246014) of binary: /usr/bin/python3"]
    r, _ = _attribute_applog(bundled, job, lines)
    syms = set(r["symptoms"])
    assert {"PROCESS_SIGABRT", "PROCESS_EXIT_NONZERO"} <= syms, syms
    assert r["outcome"] == "application" and r["confidence"] == "low"
    assert r["root_cause"]["symptom"] == "PROCESS_EXIT_NONZERO"
    assert {"outcome": "unknown", "sub_domain": "signal", "symptom": "PROCESS_SIGABRT"} in r["alternatives"]
    assert r["bad_nodes"] == []


def test_a_low_ranked_root_is_low_confidence(bundled):
    """A bare `exitcode: 1` says a Python error probably ended the rank, not which."""
    job = JobInfoBuilder("exit1", "FAILED", ("node0001",), tasks_per_node=8).build()
    r, _ = _attribute_applog(bundled, job, [
        "E0813 08:21:22.990000 1245483 torch/distributed/elastic/multiprocessing/api.py:984] failed "
        "(exitcode: 1) local_rank: 2 (pid: 1246014) of binary: /usr/bin/python3"])
    assert r["root_cause"]["symptom"] == "PROCESS_EXIT_NONZERO", r["symptoms"]
    assert r["outcome"] == "application" and r["confidence"] == "low" and r["bad_nodes"] == []


def test_no_evidence_is_unknown(bundled):
    job = JobInfoBuilder("none", "FAILED", ("node0001",)).build()
    r, _ = _attribute_applog(bundled, job, ["epoch 1 loss 0.5"])
    assert r["outcome"] == "unknown" and r["confidence"] == "low" and r["bad_nodes"] == []


# ---- no healthy node blamed on application, timeout, cancelled or success jobs ----------------

def _examples(engine):
    for d in find_examples([ROOT / "examples"]):
        yield d.name, attribute_dir(engine, d), {}


def _job_tests(engine):
    for case in engine.job_tests:
        where = f"{case.span.file if case.span else '?'}::{case.name}"
        yield where, _run_case(engine, case.job, case.observations), case.expect


def _realworld_cases(engine):
    from rulekit.rules.model import ObservationSpec

    for path in sorted((ROOT / "tests" / "realworld" / "cases").glob("*.toml")):
        for raw in tomllib.loads(path.read_text("utf-8"))["case"]:
            if "known_miss" in raw:
                continue
            obs = []
            for o in raw.get("observation", []):
                lines = o["lines"]
                lines = lines.split("\n") if isinstance(lines, str) else [str(x) for x in lines]
                obs.append(ObservationSpec(source=o["source"], lines=tuple(lines), node=o.get("node"),
                                           format=o.get("format", "text")))
            yield f"{path.name}::{raw['name']}", _run_case(engine, raw.get("job", {}), obs), {}


# where the attributed jobs come from, and how many there are at least (a source that shrank to
# nothing would pass vacuously)
SOURCES = {"example": (_examples, 10), "job test": (_job_tests, 30), "realworld case": (_realworld_cases, 10)}


@pytest.mark.parametrize("source", SOURCES)
def test_no_job_with_a_no_fault_outcome_blames_a_node(bundled, source):
    """Examples, job tests and real-world cases alike: an application, timeout, cancelled or
    success outcome has no bad node; every bad node is blamed by node, link or peer; and no
    job test expects a bad node with a no-fault outcome."""
    produce, at_least = SOURCES[source]
    wrong, seen = [], 0
    for where, r, expect in produce(bundled):
        seen += 1
        if r["outcome"] in NO_FAULT and r["bad_nodes"]:
            wrong.append(f"{where}: {r['outcome']} but bad_nodes {[b['node'] for b in r['bad_nodes']]}")
        wrong += [f"{where}: {b['node']} in bad_nodes with blame {b['blame']}" for b in r["bad_nodes"]
                  if b["blame"] not in NODE_BLAMES]
        rc = r.get("root_cause") or {}
        wrong += [f"{where}: root cause says action {rc.get('action')}, its node {b['node']} says {b['action']}"
                  for b in r["bad_nodes"] if b["node"] == rc.get("node") and b["action"] != rc.get("action")]
        want = expect.get("outcome")
        if want in NO_FAULT and expect.get("bad_nodes"):
            wrong.append(f"{where}: expects {want} with bad_nodes {expect['bad_nodes']}")
    assert seen >= at_least, f"only {seen} {source}s"
    assert wrong == []
