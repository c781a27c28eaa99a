"""Hangs from logs alone (bundled_rules/hangs.py, bundled_rules/common/hangcmp.py) on the
output of real multi-process `torch.distributed` runs (gloo, flight recorder off) in
tests/data/hang_logs/, made by make_runs.py there.

The committed job directories always run; the live run of make_runs.py is skipped when
torch cannot be imported (torch is not a dependency of rulekit).
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from rulekit.analysis.testing import find_examples, run_example
from rulekit.engine.session import Session
from rulekit.inputs.jobinfo import JobInfoBuilder
from rulekit.inputs.observation import Observation

DATA = Path(__file__).resolve().parent / "data" / "hang_logs"
DIRS = find_examples([DATA])

# what the comparison names in each run: (verdict, criterion, [(rank, node, busy?)])
NAMED = {
    "stuck-rank-allreduce": ("laggard", "missing", [(2, "node0002", False)]),
    "busy-loading-allreduce": ("laggard", "missing", [(1, "node0001", True)]),
    "tokenizing-before-init": ("laggard", "missing", [(1, "node0001", True)]),
    "store-barrier-compiling": ("laggard", "missing", [(3, "node0002", True)]),
    "barrier-saving-checkpoint": ("laggard", "named", [(0, "node0001", True)]),
    "mismatch-detail": ("mismatch", "reported", [(3, "node0002", False)]),
    "mismatch-silent": ("undecided", None, []),
    "all-ranks-wait-equal": ("undecided", None, []),
    "stuck-rank-one-log-only": ("undecided", None, []),
}


def test_every_run_is_here():
    assert sorted(d.name for d in DIRS) == sorted(NAMED)


@pytest.mark.parametrize("job_dir", DIRS, ids=[d.name for d in DIRS])
def test_real_run_attributes_as_expected(bundled, job_dir):
    res = run_example(bundled, job_dir)
    assert res.error is None, res.error
    assert res.passed, "\n".join(res.mismatches) + f"\nactual: {res.actual}"


def _attribute_dir(engine, job_dir, **kw):
    from rulekit.inputs.jobdir import read_job_dir

    jd = read_job_dir(job_dir)
    with Session(engine, jd.job, **kw) as s:
        s.ingest_batch(jd.observations)
        return s.attribute(with_trace=True)


@pytest.mark.parametrize("name", sorted(NAMED))
def test_the_comparison_names_the_rank(bundled, name):
    verdict, criterion, ranks = NAMED[name]
    result = _attribute_dir(bundled, DATA / name)
    found = result["collectors"]["hang_ranks"]["findings"]
    assert [f["verdict"] for f in found] == [verdict], found
    f = found[0]
    assert f.get("criterion") == criterion
    got = [(r["rank"], r["node"], "busy" in r) for r in f.get("ranks", [])]
    assert got == ranks, f
    # the reasoning is in the trace, with the numbers compared
    reasons = [t["reason"] for t in result["trace"] if t["rule"] == "HangLaggard"]
    assert reasons and all(reasons)
    if verdict == "undecided":
        assert any("cannot tell" in r or "no rank is behind" in r for r in reasons), reasons


def test_a_laggard_is_never_a_certain_bad_node(bundled):
    for d in DIRS:
        result = _attribute_dir(bundled, d)
        for b in result["bad_nodes"]:
            if "HANG_LAGGARD_RANK" in b["symptoms"]:
                assert b["confidence"] == "suspected" and b["blame"] == "peer", (d.name, b)
        if result["outcome"] == "application":
            assert result["bad_nodes"] == [], d.name


def _job(world_nodes, tasks):
    return JobInfoBuilder("cap", "FAILED", tuple(world_nodes), tasks_per_node=tasks).build()


def _timeout_line(rank, seq=100):
    return (f"[rank{rank}]:[E1218 20:27:21.4 ProcessGroupNCCL.cpp:629] [Rank {rank}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            f"Timeout(ms)=600000) ran for 600081 milliseconds before timing out.")


def test_missing_rank_needs_every_report(bundled):
    """64 ranks on one node, rank 40 silent: named.  The same log with the group cap
    below the number of reports: extraction kept only some of them, so "who never
    reported" is not known; nobody is named and the result says the view was capped."""
    lines = [_timeout_line(r) for r in range(64) if r != 40]
    full = _attribute_lines(bundled, _job(["node0001"], 64), lines)
    assert full["root_cause"]["symptom"] == "HANG_LAGGARD_RANK"
    assert [r["rank"] for r in full["collectors"]["hang_ranks"]["findings"][0]["ranks"]] == [40]
    capped = _attribute_lines(bundled, _job(["node0001"], 64), lines, group_cap=16)
    summary = capped["collectors"]["hang_ranks"]
    assert [f["verdict"] for f in summary["findings"]] == ["undecided"]
    assert any("NcclWatchdogTimeout" in n for n in summary["notes"])
    assert capped["bad_nodes"] == []


def _attribute_lines(engine, job, lines, **kw):
    with Session(engine, job, **kw) as s:
        s.ingest(Observation(source="applog", format="text", lines=lines, label="t"))
        return s.attribute(with_trace=True)


def test_left_out_counts_per_rule_and_node(bundled):
    lines = [_timeout_line(r) for r in range(20)]
    job = _job(["node0001"], 20)
    with Session(bundled, job, group_cap=5) as s:
        s.ingest(Observation(source="applog", format="text", lines=lines, label="t"))
        s.attribute()
        left = s.manager.stream(s.context_id).left_out()
    assert left[("NcclWatchdogTimeout", "node0001")][0] == 15


def test_sequence_numbers_of_unknown_groups_are_not_compared(bundled):
    """Two ranks at very different SeqNums with no process group printed (they may be in
    different groups): no laggard from that, no mismatch."""
    lines = [_timeout_line(0, 96120), _timeout_line(7, 64088)]
    result = _attribute_lines(bundled, _job(["node0001"], 8), lines)
    assert result["root_cause"]["symptom"] == "NCCL_WATCHDOG_TIMEOUT" and result["bad_nodes"] == []


def test_point_to_point_ops_at_one_seq_are_no_mismatch(bundled):
    """SEND on one rank and RECV on its peer at the same SeqNum of one group is a pipeline
    stage pair, not a mismatch."""
    lines = []
    for rank, op in ((0, "SEND"), (1, "RECV")):
        lines.append(f"[rank{rank}]:[E1218 20:27:21.4 ProcessGroupNCCL.cpp:629] [PG ID 3 PG GUID 3 Rank {rank}] "
                     f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType={op}, NumelIn=8, "
                     f"NumelOut=8, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.")
    result = _attribute_lines(bundled, _job(["node0001"], 2), lines)
    assert "NCCL_COLLECTIVE_MISMATCH" not in result["symptoms"]


def test_busy_progress_reads_the_last_state_on_a_line(bundled):
    line = ("Tokenizing Prompts (num_proc=64):  10%|█         | 100/1000 [00:30<04:30]\r"
            "Tokenizing Prompts (num_proc=64):  92%|█████████▏| 920/1000 [29:58<02:05, 41.59 examples/s]")
    result = _attribute_lines(bundled, _job(["node0001"], 1), [line])
    assert result["symptoms"] == ["SLURM_FAILED"]  # a progress line alone is no failure
    with Session(bundled, _job(["node0001"], 1)) as s:
        s.ingest(Observation(source="applog", format="text", lines=[line], label="t"))
        s.attribute()
        busy = [e.fields for e in s.manager.stream(s.context_id).all() if e.rule == "BusyProgress"]
    assert busy == [{"kind": "busy", "activity": "tokenizing", "pct": "92", "done": "920", "total": "1000",
                     "elapsed_s": "1798"}]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed (not a dependency)")
def test_live_run_names_the_stuck_rank(bundled, tmp_path):
    """make_runs.py itself, live: one rank stops before an all_reduce; the others' gloo
    timeouts name it (its node suspected, blamed only by its peers)."""
    spec = importlib.util.spec_from_file_location("make_runs", DATA / "make_runs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    assert mod.main(["--out", str(tmp_path), "--only", "stuck-rank-allreduce"]) == 0
    result = _attribute_dir(bundled, tmp_path / "stuck-rank-allreduce")
    assert result["root_cause"]["symptom"] == "HANG_LAGGARD_RANK"
    assert [(b["node"], b["confidence"]) for b in result["bad_nodes"]] == [("node0002", "suspected")]
    expected = json.loads((DATA / "stuck-rank-allreduce" / "expected.json").read_text())
    assert result["outcome"] == expected["outcome"]


def _closed_and_timeouts(closed_at):
    lines = [f"0: [rank0]: {closed_at} RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] "
             f"Connection closed by peer [10.0.0.2]:4312"]
    for r in (1, 2, 3):
        lines.append(f"{r}: [rank{r}]: 2026-11-19 10:30:00,000 RuntimeError: [../third_party/gloo/gloo/transport/tcp/"
                     f"unbound_buffer.cc:78] Timed out waiting 1800000ms for recv operation to complete")
    return lines


def test_a_connection_closed_while_peers_timed_out_is_their_consequence(bundled):
    """Undecided hang: a closed connection with no earlier stamp of its own is a peer that
    gave up and left (demoted), one stamped half an hour before the timeouts is not."""
    job = _job(["node0001", "node0002"], 2)
    late = _attribute_lines(bundled, job, _closed_and_timeouts("2026-11-19 10:30:01,000"))
    assert "NCCL_CONNECTION_CLOSED" not in late["symptoms"] and late["outcome"] == "unknown"
    early = _attribute_lines(bundled, job, _closed_and_timeouts("2026-11-19 10:00:00,000"))
    assert "NCCL_CONNECTION_CLOSED" in early["symptoms"]


def test_opcount_lines_without_a_wait_name_nobody(bundled):
    """Processes one collective apart at the end of a log are a job in flight: without a
    timeout, a monitored barrier or a mismatch, the opCount lines name no laggard."""
    lines = []
    for pid, last in ((615, 0x139E), (616, 0x139E), (619, 0x139D)):
        for oc in range(0x139C, last + 1):
            lines.append(f"node0001:{pid}:{pid + 1} [0] NCCL INFO AllReduce: opCount {oc:x} sendbuff 0x1 recvbuff 0x1 "
                         f"count 1024 datatype 7 op 0 root 0 comm 0x{pid:x}0 [nranks=3] stream 0x2")
    result = _attribute_lines(bundled, _job(["node0001"], 3), lines)
    assert not {"HANG_LAGGARD_RANK", "HANG_LAGGARD_WORKLOAD"} & set(result["symptoms"])
    assert "hang_ranks" not in result["collectors"] or not result["collectors"]["hang_ranks"]
