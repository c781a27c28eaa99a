"""The seed example (`examples/xid149-nvlink`) runs the way the spec, the article
and README describe: HandleXidBurstEvents decodes the Xid 149 burst (EARLY) and
leaves the three NCCL errors alone; all candidates reach FINAL refinement, where
Xid149AndNvlinkFiltering keeps the signal-integrity symptom and demotes the other
nodes' symptoms, and Gb200PriorityRootCause demotes the GPU-local consequences on
node-02.  Before the fix, the LATE filter DemoteVictimsWhenPrimary demoted all of
them first and the two named refiners had (almost) nothing left to do."""
from __future__ import annotations

from pathlib import Path

from rulekit.engine.jobrun import attribute_dir

SEED = Path(__file__).resolve().parent.parent / "examples" / "xid149-nvlink"


def test_the_spec_named_rules_do_the_work(bundled):
    r = attribute_dir(bundled, SEED, with_trace=True)
    assert (r["outcome"], r["root_cause"]["symptom"], r["root_cause"]["node"]) == (
        "hardware", "XID-149-NVLINK_SIGNAL_INTEGRITY", "node-02")
    assert [b["node"] for b in r["bad_nodes"]] == ["node-02"]
    by_rule: dict[str, set] = {}
    for t in r["trace"]:
        if t["action"] in ("demote", "demote_symptom", "discard", "discard_symptom"):
            by_rule.setdefault(t["rule"], set()).add((t["symptom"], t["node"]))
    assert "DemoteVictimsWhenPrimary" not in by_rule
    nccl = {("NCCL_WATCHDOG_TIMEOUT", "node-01"), ("NCCL_IB_RETRY_EXCEEDED", "node-03"),
            ("NCCL_REMOTE_ERROR", "node-04")}
    assert nccl <= by_rule["Xid149AndNvlinkFiltering"]
    assert ("XID-154-RECOVERY_ACTION_CHANGED", "node-02") in by_rule["Gb200PriorityRootCause"]
    # the NCCL reports stay in the report as interesting evidence
    inter = {n["node"]: n["symptoms"] for n in r["interesting_nodes"]}
    assert "NCCL_WATCHDOG_TIMEOUT" in inter["node-01"] and "NCCL_IB_RETRY_EXCEEDED" in inter["node-03"]
    assert "NCCL_REMOTE_ERROR" in inter["node-04"]
    # HandleXidBurstEvents (EARLY) touched only the Xid 149 events
    early = {t["symptom"] for t in r["trace"] if t["phase"] == "filter:EARLY"}
    assert early <= {"XID-149-NVLINK_NETIR_ERROR", "XID-149-NVLINK_SIGNAL_INTEGRITY"}


def test_other_primaries_still_demote_victims_in_the_late_filter(bundled):
    """Without an NVLink5 fault DemoteVictimsWhenPrimary does its job as before."""
    r = attribute_dir(bundled, SEED.parent / "xid79-offbus", with_trace=True)
    assert any(t["rule"] == "DemoteVictimsWhenPrimary" for t in r["trace"])
