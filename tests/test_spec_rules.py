"""The rules the spec names, through the bundled corpus: HandleXidBurstEvents,
Xid149AndNvlinkFiltering, Gb200PriorityRootCause, Xid171Cascade,
DemoteInsufficientPermissions, NVRXInjectedException."""
from __future__ import annotations

import shutil

import pytest

from rulekit.inputs.jobinfo import JobInfoBuilder
from rulekit.rules.loader import bundled_rules_path, load_corpus
from rulekit.inputs.observation import Observation
from rulekit.engine.session import Session

NODES = ("node-01", "node-02", "node-03", "node-04")
X149 = "[ 5860.1189] NVRM: Xid (PCI:0008:01:00): 149, NETIR_LINK_EVT {sev} XC0 i0 Link {link:02d} (0x004505c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"
X146 = "[ 5860.2] NVRM: Xid (PCI:0008:01:00): 146, TLW_ERR Fatal XC1 i2 Link 03 (0x01200000 0x00000010 0x00000000 0x00000000)"
IB12 = ("16: node-03:99120:99233 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<33092> "
        "with error 12, opcode 0, len 0, vendor err 129 (Recv) localGid ::ffff:10.0.0.3 remoteGids::ffff:10.0.0.2")
WATCHDOG = ("[rank0]:[E601 03:22:41.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=41233, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.")
XID45 = "[ 5861.0] NVRM: Xid (PCI:0008:01:00): 45, pid=88412, name=python3, Ch 00000008"
XID48 = "[ 5861.1] NVRM: Xid (PCI:0008:01:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x7fdf0de80 partition 5, subpartition 1"


@pytest.fixture(scope="module")
def spec_engine(tmp_path_factory):
    """The bundled corpus without the corpus's own cascade filters and refiners, so that each rule
    the spec names is seen doing its own work (the full corpus is tested too)."""
    root = tmp_path_factory.mktemp("spec") / "rules"
    shutil.copytree(bundled_rules_path(), root, ignore=shutil.ignore_patterns("cascade_filters.py", "cascade_refiners.py", "__pycache__"))
    res = load_corpus([root])
    assert res.engine is not None, [str(d) for d in res.diagnostics if d.severity.value == "error"]
    return res.engine


def run(engine, syslog: dict[str, list[str]] | None = None, applog: list[str] | None = None, state="FAILED", trace=True):
    job = JobInfoBuilder("t", state, NODES, tasks_per_node=8).build()
    with Session(engine, job) as s:
        for node, lines in (syslog or {}).items():
            s.ingest(Observation(source="syslog", node=node, lines=lines, label=f"syslog/{node}.log"))
        if applog:
            s.ingest(Observation(source="applog", lines=applog, label="applog/train.log"))
        return s.attribute(with_trace=trace)


def by_rule(result, rule):
    return [t for t in result["trace"] if t["rule"] == rule]


def test_handle_xid_burst_events_decodes_one_event_per_node_and_symptom(bundled):
    r = run(bundled, {"node-02": [X149.format(sev="Fatal", link=8), X149.format(sev="Fatal", link=9)]})
    added = [t for t in by_rule(r, "HandleXidBurstEvents") if t["action"] == "add"]
    assert [(t["symptom"], t["node"]) for t in added] == [("XID-149-NVLINK_SIGNAL_INTEGRITY", "node-02")]
    assert "link(s) [8, 9]" in added[0]["reason"]
    demoted = [t for t in by_rule(r, "HandleXidBurstEvents") if t["action"] == "demote"]
    assert len(demoted) == 2 and {t["symptom"] for t in demoted} == {"XID-149-NVLINK_NETIR_ERROR"}
    assert r["root_cause"]["symptom"] == "XID-149-NVLINK_SIGNAL_INTEGRITY"


def test_handle_xid_burst_events_nonfatal_is_interesting_and_other_units_keep_their_name(bundled):
    r = run(bundled, {"node-01": [X149.format(sev="Nonfatal", link=1)], "node-03": [X146]})
    assert r["root_cause"]["symptom"] == "XID-146-NVLINK_TLW_FATAL" and r["root_cause"]["node"] == "node-03"
    inter = {b["node"]: b["symptoms"] for b in r["interesting_nodes"]}
    assert "XID-NVLINK5_NONFATAL" in inter["node-01"]


def test_xid149_and_nvlink_filtering_demotes_nccl_errors_on_peers(spec_engine, bundled):
    full = run(bundled, {"node-02": [X149.format(sev="Fatal", link=8)]}, [IB12, WATCHDOG])
    assert [b["node"] for b in full["bad_nodes"]] == ["node-02"] and full["outcome"] == "hardware"
    r = run(spec_engine, {"node-02": [X149.format(sev="Fatal", link=8)]}, [IB12, WATCHDOG])
    assert [b["node"] for b in r["bad_nodes"]] == ["node-02"]
    demoted = {t["symptom"] for t in by_rule(r, "Xid149AndNvlinkFiltering") if t["action"] == "demote_symptom"}
    assert {"NCCL_IB_RETRY_EXCEEDED", "NCCL_WATCHDOG_TIMEOUT"} <= demoted
    kept_as_evidence = {(e["symptom"], e["node"]) for e in r["evidence"] if e["event_type"].endswith("interesting")}
    assert ("NCCL_IB_RETRY_EXCEEDED", "node-03") in kept_as_evidence


def test_without_nvlink5_the_nccl_errors_are_not_demoted_by_it(spec_engine):
    r = run(spec_engine, None, [IB12, WATCHDOG])
    assert by_rule(r, "Xid149AndNvlinkFiltering") == []
    assert r["outcome"] != "hardware"


def test_gb200_priority_root_cause_demotes_local_consequences_only(spec_engine):
    r = run(spec_engine, {"node-02": [X149.format(sev="Fatal", link=8), XID45, XID48], "node-04": [XID48]})
    acts = {(t["symptom"], t["node"]) for t in by_rule(r, "Gb200PriorityRootCause") if t["action"] == "demote_symptom"}
    assert ("XID-45-PREEMPTIVE_REMOVAL", "node-02") in acts and ("XID-48-GPU_ECC_DBE", "node-02") in acts
    assert r["root_cause"]["symptom"] == "XID-149-NVLINK_SIGNAL_INTEGRITY"
    # the DBE on another node is an independent fault: still a bad node
    assert {b["node"]: b["symptoms"] for b in r["bad_nodes"]}["node-04"] == ["XID-48-GPU_ECC_DBE"]


def test_xid171_cascade_discards_48_and_63(spec_engine):
    x171 = "[ 812.2] NVRM: Xid (PCI:0018:01:00): 171, pid='<unknown>', name=<unknown>, Uncorrectable DRAM error"
    x63 = "[ 812.3] NVRM: Xid (PCI:0018:01:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row (0x1) marked for remapping, reset gpu to activate."
    r = run(spec_engine, {"node-01": [XID48, x171, x63]})
    assert r["root_cause"]["symptom"] == "XID-171-UNCORRECTABLE_DRAM_ERROR"
    present = {e["symptom"] for e in r["evidence"]}
    assert "XID-48-GPU_ECC_DBE" not in present and "XID-63-DRAM_RETIREMENT_EVENT" not in present  # discarded, not demoted
    assert {t["action"] for t in by_rule(r, "Xid171Cascade")} >= {"discard_symptom", "discard"}


def test_demote_insufficient_permissions(bundled):
    line = "NVRM: nvAssertFailedNoLog: Assertion failed: status == NV_OK, returned NV_ERR_INSUFFICIENT_PERMISSIONS"
    r = run(bundled, {"node-01": [line]})
    assert r["bad_nodes"] == [] and r["outcome"] == "unknown"
    assert [b["symptoms"] for b in r["interesting_nodes"]] == [["NV_ERR_INSUFFICIENT_PERMISSIONS"]]
    assert by_rule(r, "DemoteInsufficientPermissions")[0]["phase"] == "filter:LATE"


def test_nvrx_injected_exception_is_never_mistaken_for_a_real_fault(bundled):
    lines = ["[rank3]: Traceback (most recent call last):",
             '[rank3]:   File "/workspace/train.py", line 88, in <module>',
             "[rank3]: nvidia_resiliency_ext.shared_utils.inject_fault.InjectedException: injected",
             WATCHDOG]
    r = run(bundled, None, lines)
    assert r["root_cause"]["symptom"] == "NVRX_INJECTED_FAULT" and r["sub_domain"] == "injected"
    assert r["root_cause"]["node"] == "node-01"
