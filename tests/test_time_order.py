"""Order in time: the one clock every stamp is placed on (`rulekit.engine.timeline`),
the evidence listed in time order, the proof of "came before" rules use
(`rulekit.engine.ordering.lead` / `Before`, with the clock-skew tolerance), and the
cascade rules built on it (bundled_rules/time_order.py, the victims that came first)
as `--trace` and `explain` show them.  The rules' own job cases are in
bundled_rules/time_order.test.toml (run by `rulekit test`); here: what those cases
cannot say (the tolerance setting, trace and explain text, year and zone handling).
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rulekit.analysis.explain import explain_job
from rulekit.config import GlobalConfig
from rulekit.engine.jobrun import attribute_dir
from rulekit.engine.ordering import Before, all_before, event_order_key, lead, when_of
from rulekit.engine.store import Event
from rulekit.engine.timeline import Clock, job_offset, year_hint
from rulekit.extract.linectx import NO_YEAR, YearHint
from rulekit.inputs.jobinfo import JobInfo
from rulekit.rules.loader import load_corpus

REPO = Path(__file__).resolve().parent.parent
XID48 = ("Jun  1 03:10:00 node-01 kernel: [  600.118900] NVRM: Xid (PCI:0000:3b:00): 48, pid=2211, name=python, An "
         "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 2, subpartition 0.")
XID79 = ("Jun  1 03:10:30 node-02 kernel: [  630.442190] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
         "name=<unknown>, GPU has fallen off the bus.")
WATCHDOG = ("[rank0]:[E601 {clock}.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 "
            "milliseconds before timing out.")


@pytest.fixture(scope="module")
def engine():
    return load_corpus(None).engine


def _job(tmp_path: Path, files: dict[str, str], start: str | None = "2026-06-01T02:40:00Z") -> Path:
    root = tmp_path / "job"
    root.mkdir()
    (root / "job.toml").write_text('[job]\nid = "t"\nstate = "FAILED"\nnodes = ["node-01", "node-02"]\n'
                                   'tasks_per_node = 8\n' + (f"start = {start}\n" if start else ""))
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text + "\n")
    return root


def _ev(i: int, ts: str | None = None, carried: str | None = None, obs: int | None = 1, line: int | None = 1,
        rank: int | None = None) -> Event:
    fields = {}
    if carried:
        fields["carried_ts"] = carried
    if rank is not None:
        fields["rank"] = rank
    return Event(id=i, event_type="Attribution.node.bad", rule="R", node="n", symptom="S", timestamp=ts,
                 line_num=line, datum="x", source="applog", format="text", label=None, payload={"fields": fields},
                 obs_context_id=obs)


# ---- the proof of "came before" ---------------------------------------------------------------------


def test_lead_needs_an_own_stamp_further_ahead_than_the_tolerance():
    a = _ev(1, "2026-06-01T03:00:00", obs=1)
    b = _ev(2, "2026-06-01T03:00:30", obs=2)
    assert lead(a, b, 2.0) == 30.0
    assert lead(a, b, 30.0) is None  # within the tolerance: simultaneous
    assert lead(b, a, 2.0) is None
    inherited = _ev(3, None, carried="2026-06-01T03:00:00", obs=3)
    assert lead(inherited, b, 2.0) is None  # a carried stamp is no upper bound of when its line was printed
    assert lead(a, _ev(5, None, carried="2026-06-01T03:01:00", obs=5), 2.0) == 60.0  # b: printed 03:01 at the earliest
    assert lead(a, _ev(6, None, obs=6), 2.0) is None  # no time: no order


def test_lead_in_one_stream_needs_the_print_order_to_agree():
    first = _ev(1, "2026-06-01T03:00:00", obs=1, line=5)
    later_line_earlier_stamp = _ev(2, "2026-06-01T03:10:00", obs=1, line=2)
    assert lead(first, later_line_earlier_stamp, 2.0) is None  # the stamps contradict the print order
    assert lead(first, _ev(3, "2026-06-01T03:10:00", obs=1, line=9), 2.0) == 600.0
    assert lead(first, _ev(4, "2026-06-01T03:10:00", obs=1, line=2, rank=3), 2.0) == 600.0  # another rank: stamps decide


def test_before_is_lead_over_every_event():
    then = [_ev(1, "2026-06-01T03:10:00", obs=1), _ev(2, "2026-06-01T03:05:00", obs=2, line=7)]
    before = Before(then, 2.0)
    assert before(_ev(3, "2026-06-01T03:00:00", obs=3)) == 300.0
    assert before(_ev(4, "2026-06-01T03:06:00", obs=3)) is None
    assert before(_ev(5, "2026-06-01T03:00:00", obs=2, line=9)) is None  # after one of them in its own stream
    assert Before([*then, _ev(6, None, obs=4)], 2.0)(_ev(7, "2026-06-01T02:00:00", obs=3)) is None  # one untimed
    assert all_before([_ev(8, "2026-06-01T02:00:00", obs=3), _ev(9, "2026-06-01T02:30:00", obs=3)], then, 2.0) == 2100.0
    assert all_before([], then, 2.0) is None and Before([], 2.0)(_ev(10, "2026-06-01T02:00:00")) is None


# ---- the one clock -----------------------------------------------------------------------------------


def test_year_less_stamps_take_the_year_of_the_jobs_other_stamps():
    job = JobInfo(id="j")
    glog = _ev(1, NO_YEAR + "-06-01T03:22:41.426415")
    carried = _ev(2, None, carried=NO_YEAR + "-12-31T23:59:59")
    dated = _ev(3, "2026-06-01T03:00:00+00:00")
    clock = Clock.of(job, [glog, carried, dated])
    for e in (glog, carried, dated):
        clock.settle(e)
    assert glog.timestamp == "2026-06-01T03:22:41.426415"
    assert carried.fields["carried_ts"] == "2025-12-31T23:59:59"  # the year that puts it nearest the job's stamps
    assert dated.when == "2026-06-01T03:00:00"
    alone = _ev(4, NO_YEAR + "-06-01T03:22:41")
    Clock.of(job, [alone]).settle(alone)
    assert alone.timestamp == NO_YEAR + "-06-01T03:22:41"  # no stamp says the year: it stays unknown
    ev = alone.to_evidence()
    assert ev["timestamp"] is None and ev["time_of_year"] == "06-01T03:22:41" and ev["time_source"] == "line"


def test_naive_stamps_are_read_in_the_zone_the_job_record_was_written_in():
    cest = timezone(timedelta(hours=2))
    job = JobInfo(id="j", start=datetime(2026, 6, 1, 5, 0, tzinfo=cest), end=datetime(2026, 6, 1, 6, 0, tzinfo=cest))
    assert job_offset(job) == timedelta(hours=2)
    naive, zoned = _ev(1, "2026-06-01T05:10:00"), _ev(2, "2026-06-01T03:09:00+00:00")
    clock = Clock.of(job, [naive, zoned])
    clock.settle(naive)
    clock.settle(zoned)
    assert naive.when == "2026-06-01T03:10:00" and zoned.when == "2026-06-01T03:09:00"
    assert event_order_key(zoned) < event_order_key(naive)  # read as UTC, 05:10 would sort two hours late
    assert job_offset(JobInfo(id="j", start=datetime(2026, 6, 1, tzinfo=timezone.utc))) is None
    assert when_of("2026-06-01T03:09:00.5+00:00") == "2026-06-01T03:09:00.5"


def test_the_job_gives_year_less_stamps_their_year_across_a_new_year():
    utc = timezone.utc
    assert year_hint(JobInfo(id="j")) is None
    assert year_hint(JobInfo(id="j", start=datetime(2026, 6, 1, tzinfo=utc))) == 2026
    hint = year_hint(JobInfo(id="j", start=datetime(2026, 12, 31, 22, tzinfo=utc), end=datetime(2027, 1, 1, 2, tzinfo=utc)))
    assert hint == YearHint(2026, 2027, "12-31") and hint.of("12", "31") == 2026 and hint.of("01", "01") == 2027


# ---- the result ---------------------------------------------------------------------------------------


def _times(evidence: list[dict]) -> list[tuple]:
    out = []
    for e in evidence:
        ts = e.get("timestamp")
        out.append((0, when_of(ts)) if ts else (1, ""))
    return out


@pytest.mark.parametrize("example", sorted(p.name for p in (REPO / "examples").iterdir() if (p / "job.toml").exists()))
def test_evidence_is_listed_in_time_order(engine, example):
    r = attribute_dir(engine, REPO / "examples" / example)
    times = _times(r["evidence"])
    assert times == sorted(times)


def test_every_applog_event_of_the_nvlink_example_with_a_stamp_has_it(engine):
    r = attribute_dir(engine, REPO / "examples" / "xid149-nvlink")
    by_line = {(e["source"], e["line_num"]): e for e in r["evidence"]}
    assert by_line[("applog/train.log", 42)]["timestamp"] == "2026-06-01T03:22:41.426415"  # `[E601 ...]`: a 3-digit month-day
    assert by_line[("applog/train.log", 50)]["timestamp"] == "2026-06-01T03:22:42.001000"
    for e in r["evidence"]:
        assert e["time_source"] in ("line", "inherited", None)
        assert (e["time_source"] is None) == (e["timestamp"] is None)


def test_the_earlier_fault_is_the_root_cause_in_trace_and_explain(engine, tmp_path):
    job = _job(tmp_path, {"syslog/node-01.log": XID48, "syslog/node-02.log": XID79,
                          "applog/train.log": WATCHDOG.format(clock="02:50:00") + "\n"
                          + WATCHDOG.format(clock="03:20:31").replace("[rank0]", "[rank9]")})
    r = attribute_dir(engine, job, with_trace=True)
    assert (r["root_cause"]["symptom"], r["root_cause"]["node"]) == ("XID-48-GPU_ECC_DBE", "node-01")
    assert sorted(b["node"] for b in r["bad_nodes"]) == ["node-01", "node-02"]
    prefer = [t for t in r["trace"] if t["action"] == "prefer_symptom"]
    assert len(prefer) == 1 and prefer[0]["rule"] == "FirstInTimeRootCause"
    assert "came 30 s before `XID-79-FALLEN_OFF_THE_BUS`" in prefer[0]["reason"]
    keep = [t for t in r["trace"] if t["action"] == "keep"]
    assert [(t["rule"], t["node"]) for t in keep] == [("DemoteVictimsWhenPrimary", "node-01")]
    assert "came 1200 s before the first primary fault" in keep[0]["reason"]
    assert "NCCL_WATCHDOG_TIMEOUT" in r["symptoms"]  # the watchdog that came first stays a symptom of the job
    d = explain_job(engine, job)
    assert any("came 30 s before" in w for w in d["why"])
    notes = {c["symptom"]: c.get("notes", []) for c in d["candidates"]}
    assert notes["XID-48-GPU_ECC_DBE"][0]["action"] == "prefer_symptom"
    assert notes["NCCL_WATCHDOG_TIMEOUT"][0]["action"] == "keep"


def test_the_clock_skew_tolerance_is_one_setting(tmp_path):
    """With a tolerance of a minute, 30 s apart is simultaneous: the ranks decide, and the
    watchdog 20 minutes ahead is still not a victim."""
    job = _job(tmp_path, {"syslog/node-01.log": XID48, "syslog/node-02.log": XID79,
                          "applog/train.log": WATCHDOG.format(clock="02:50:00")})
    tolerant = load_corpus(None, config=GlobalConfig(clock_skew_seconds=60.0)).engine
    r = attribute_dir(tolerant, job, with_trace=True)
    assert r["root_cause"]["symptom"] == "XID-79-FALLEN_OFF_THE_BUS"
    assert not [t for t in r["trace"] if t["action"] == "prefer_symptom"]
    assert [t["action"] for t in r["trace"] if t["symptom"] == "NCCL_WATCHDOG_TIMEOUT"] == ["keep"]
    blind = load_corpus(None, config=GlobalConfig(clock_skew_seconds=86400.0)).engine
    r = attribute_dir(blind, job, with_trace=True)
    assert [t["action"] for t in r["trace"] if t["symptom"] == "NCCL_WATCHDOG_TIMEOUT"] == ["demote"]


def test_without_a_job_year_glog_stamps_are_dated_by_the_other_logs(engine, tmp_path):
    job = _job(tmp_path, {"syslog/node-02.log": "2026-06-01T03:10:30+0000 node-02 kernel: NVRM: Xid (PCI:0000:3b:00): "
                                                "79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
                          "applog/train.log": WATCHDOG.format(clock="03:20:31")}, start=None)
    r = attribute_dir(engine, job)
    stamps = {e["symptom"]: (e["timestamp"], e.get("time_of_year")) for e in r["evidence"]}
    assert stamps["NCCL_WATCHDOG_TIMEOUT"] == ("2026-06-01T03:20:31.426415", None)
    assert stamps["XID-79-FALLEN_OFF_THE_BUS"] == ("2026-06-01T03:10:30+00:00", None)
    (job / "syslog" / "node-02.log").unlink()
    r = attribute_dir(engine, job)
    ev = next(e for e in r["evidence"] if e["symptom"] == "NCCL_WATCHDOG_TIMEOUT")
    assert ev["timestamp"] is None and ev["time_of_year"] == "06-01T03:20:31.426415"
    json.dumps(r)  # (the result stays JSON)


def test_stamped_evidence_lines_get_their_stamp_over_examples_and_realworld(engine):
    """bench/timestamp_coverage.py's measure, kept: of the evidence lines whose text holds a
    date and a clock, at least 95 % show that line's own stamp (`timestamp`, or `time_of_year`
    when nothing tells the year); it prints the share."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("timestamp_coverage_under_test",
                                                  REPO / "bench" / "timestamp_coverage.py")
    mod = importlib.util.module_from_spec(spec)
    saved = list(sys.path)
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path[:] = saved
    results = mod._examples(engine) + mod._realworld(engine)
    stamped, got, no_year, misses = mod.count(results)
    print(f"{got}/{stamped} stamped evidence lines with their stamp ({no_year} year unknown)")
    assert stamped > 200 and got >= 0.95 * stamped, misses[:10]
