"""JobInfoBuilder's allocation_failure / execution_cancellation: one test per
sentence of the spec's "Sources" section, through the bundled rules."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from rulekit.inputs.jobinfo import ExecutionCancellation, JobInfoBuilder, SchedulerFailure
from rulekit.inputs.observation import Observation
from rulekit.engine.session import Session

T = datetime(2026, 6, 1, 3, 0, tzinfo=timezone.utc)
NODES = ("node-01", "node-02")
XID79 = "[ 5120.118843] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def attribute(engine, builder: JobInfoBuilder, syslog: dict[str, list[str]] | None = None) -> dict:
    with Session(engine, builder.build()) as s:
        for node, lines in (syslog or {}).items():
            s.ingest(Observation(source="syslog", node=node, lines=lines))
        return s.attribute()


def cancel(record="rec-1", by="nvrx", t=T) -> ExecutionCancellation:
    return ExecutionCancellation(record_id=record, cancelled_by=by, source_time=t)


def test_cancellation_supplies_the_cancellation_symptom_whatever_the_raw_state(bundled):
    for raw in ("FAILED", "COMPLETED", "TIMEOUT", "RUNNING"):
        r = attribute(bundled, JobInfoBuilder("rec-1", raw, NODES).execution_cancellation(cancel()))
        assert r["outcome"] == "cancelled", raw
        assert r["root_cause"]["symptom"] == "EXECUTION_CANCELLED", raw


def test_independent_faults_still_take_precedence(bundled):
    r = attribute(bundled, JobInfoBuilder("rec-1", "CANCELLED", NODES).execution_cancellation(cancel()),
                  {"node-02": [XID79]})
    assert r["outcome"] == "hardware" and r["root_cause"]["node"] == "node-02"
    assert r["root_cause"]["symptom"].startswith("XID-79-")


def test_allocation_failure_without_cancellation_changes_nothing(bundled):
    plain = attribute(bundled, JobInfoBuilder("rec-1", "FAILED", NODES))
    with_af = attribute(bundled, JobInfoBuilder("rec-1", "FAILED", NODES).allocation_failure(
        SchedulerFailure(allocation_id="alloc-9", state="NODE_FAIL", failed_node="node-02", time=T)))
    assert with_af["outcome"] == plain["outcome"] == "unknown"
    assert with_af["bad_nodes"] == plain["bad_nodes"] == []


def test_allocation_failure_with_cancellation_blames_the_failed_node_of_the_record(bundled):
    r = attribute(bundled, JobInfoBuilder("rec-1", "CANCELLED", NODES).execution_cancellation(cancel())
                  .allocation_failure(SchedulerFailure("alloc-9", "NODE_FAIL", "node-02", time=T)))
    assert r["outcome"] == "infrastructure"
    assert r["root_cause"] == {**r["root_cause"], "symptom": "ALLOCATION_NODE_FAILURE", "node": "node-02"}
    assert [b["node"] for b in r["bad_nodes"]] == ["node-02"]


def test_inherited_node_fail_outside_the_record_is_not_attributed(bundled):
    r = attribute(bundled, JobInfoBuilder("rec-1", "NODE_FAIL", NODES, failed_node="node-77")
                  .execution_cancellation(cancel())
                  .allocation_failure(SchedulerFailure("alloc-9", "NODE_FAIL", "node-77", time=T)))
    assert r["outcome"] == "cancelled" and r["bad_nodes"] == []
    assert "SLURM_NODE_FAIL" not in r["symptoms"]


def test_unless_the_records_own_failed_node_is_a_different_node_among_its_nodes(bundled):
    r = attribute(bundled, JobInfoBuilder("rec-1", "NODE_FAIL", NODES, failed_node="node-01")
                  .execution_cancellation(cancel())
                  .allocation_failure(SchedulerFailure("alloc-9", "NODE_FAIL", "node-77", time=T)))
    assert r["outcome"] == "infrastructure"
    assert r["root_cause"]["symptom"] == "SLURM_NODE_FAIL" and r["root_cause"]["node"] == "node-01"


def test_own_failed_node_equal_to_the_allocations_is_still_inherited(bundled):
    # node-77 is the allocation's failed node and not among the record's nodes: inherited, not attributed
    r = attribute(bundled, JobInfoBuilder("rec-1", "NODE_FAIL", NODES, failed_node="node-77")
                  .execution_cancellation(cancel())
                  .allocation_failure(SchedulerFailure("alloc-9", "NODE_FAIL", "node-77", time=T)))
    assert r["bad_nodes"] == []


def test_omitting_both_keeps_existing_behaviour(bundled):
    assert attribute(bundled, JobInfoBuilder("rec-1", "TIMEOUT", NODES))["outcome"] == "timeout"
    r = attribute(bundled, JobInfoBuilder("rec-1", "NODE_FAIL", NODES, failed_node="node-02"))
    assert r["outcome"] == "infrastructure" and r["root_cause"]["node"] == "node-02"
    assert attribute(bundled, JobInfoBuilder("rec-1", "COMPLETED", NODES))["outcome"] == "success"
    assert attribute(bundled, JobInfoBuilder("rec-1", "CANCELLED", NODES))["outcome"] == "cancelled"


@pytest.mark.parametrize("bad, message", [
    (cancel(record="rec-2"), "not 'rec-1'"),
    (cancel(by=""), "identity"),
    (cancel(t=None), "no source time"),
    (cancel(t=datetime(2026, 6, 1, 3, 0)), "timezone-aware"),
])
def test_mismatched_record_missing_identity_or_time_is_rejected(bad, message):
    from rulekit.diagnostics import RulekitError

    with pytest.raises(RulekitError) as exc:
        JobInfoBuilder("rec-1", "CANCELLED", NODES).execution_cancellation(bad)
    assert exc.value.diagnostics[0].code == "RK506" and message in str(exc.value)


def test_allocation_failure_time_must_be_aware():
    from rulekit.diagnostics import RulekitError

    with pytest.raises(RulekitError):
        JobInfoBuilder("rec-1").allocation_failure(SchedulerFailure("a", "NODE_FAIL", "n", time=datetime(2026, 1, 1)))
    with pytest.raises(RulekitError):
        JobInfoBuilder("rec-1").allocation_failure(SchedulerFailure("", "NODE_FAIL", "n"))


def test_scheduler_lines_never_fall_back_to_the_only_node(bundled):
    # a completed single-node job is a success with no bad node (the state line names no node)
    r = attribute(bundled, JobInfoBuilder("rec-1", "COMPLETED", ("node-01",)))
    assert r["outcome"] == "success" and r["bad_nodes"] == []
