"""The plain job-record reader (`rulekit.inputs.jobrecord.plain_record`) against the
pydantic model it stands in for: on any record, `parse_job_record` gives what the
model gives (the same JobInfo, down to its repr, or the same problems), the plain
reader accepts only records the model accepts, and it does take the records users
write (every example's job.toml, every bundled job test), so a valid job.toml is
read without pydantic."""
from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import rulekit.inputs.jobrecord as jr
from rulekit.inputs.jobrecord import JobRecordError, parse_job_record, plain_record, problems_of
from rulekit.inputs.jobrecord_model import JobRecord

ROOT = Path(__file__).resolve().parents[1]


def via_model(data: Any) -> tuple:
    """What the pydantic model alone makes of a record (the behaviour before the plain reader)."""
    try:
        info = JobRecord.model_validate(dict(data)).to_jobinfo()
    except ValidationError as e:
        return ("rejected", problems_of(e))
    except JobRecordError as e:
        return ("rejected", e.problems)
    return ("ok", info, repr(info))


def via_parse(data: Any) -> tuple:
    try:
        info = parse_job_record(data)
    except JobRecordError as e:
        return ("rejected", e.problems)
    return ("ok", info, repr(info))


UTC2 = timezone(timedelta(hours=2))
texts = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["", "FAILED", "cancelled by 123", "FAILED+", "NODE_FAIL", "BOGUS", "1:0", "-7", "1:x", "0",
                     "12", "007", "node-01", "node-02", "x" * 257, "x" * 256,
                     "2026-06-01T03:00:00Z", "2026-06-01 03:00:00+02:00", "2026-06-01T03:31:10.5z",
                     "2026-06-01T03:00:00", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00+00:00"]))
scalars = st.one_of(
    st.none(), texts, st.booleans(), st.integers(-2**33, 2**33), st.sampled_from([0, 1, 8, 10**6, 10**6 + 1, -1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([datetime(2026, 6, 1, 3, tzinfo=timezone.utc), datetime(2026, 6, 1, 5, tzinfo=UTC2),
                     datetime(2026, 6, 1, 2, 59, tzinfo=timezone.utc), datetime(2026, 6, 1, 3), date(2026, 6, 1)]))
node_lists = st.one_of(st.lists(st.sampled_from(["node-01", "node-02", "node-03"]), max_size=4),
                       st.lists(scalars, max_size=3), st.tuples(st.just("node-01")))
rank_maps = st.one_of(
    st.dictionaries(st.one_of(st.sampled_from(["0", "1", "7", "x", "-1", "1234567890"]), st.integers(-1, 9),
                              st.booleans()),
                    st.one_of(st.sampled_from(["node-01", "node-02", "node-09"]), scalars), max_size=3),
    scalars, st.lists(scalars, max_size=2))


def tables(fields: dict[str, st.SearchStrategy]) -> st.SearchStrategy:
    return st.one_of(st.none(), scalars,
                     st.dictionaries(st.sampled_from([*fields, "extra"]), scalars, max_size=len(fields) + 1),
                     st.fixed_dictionaries({}, optional={k: st.one_of(v, scalars) for k, v in fields.items()}))


SCALARS = [None, "", "x", 0, 1, -1, True, False, 1.5, float("nan"), [], {}, ("a",), date(2026, 6, 1),
           datetime(2026, 6, 1, 3), datetime(2026, 6, 1, 3, tzinfo=timezone.utc)]
TIMES = ["2026-06-01T03:00:00Z", "2026-06-01T04:00:00+02:00", "2026-06-01t03:31:10.25Z", "2026-06-01",
         "2026-06-01T03:00:00", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00+00:00", "2026-06-01T02:59:59Z",
         datetime(2026, 6, 1, 3, tzinfo=timezone.utc), datetime(2026, 6, 1, 5, tzinfo=UTC2), date(2026, 6, 1),
         datetime(2026, 6, 1, 3), datetime(2026, 6, 1, 2, tzinfo=timezone.utc), 1780283700]
NAMES = ["node-01", "node-02", "node-09", "ops", "", "x" * 600]
EDGES: dict[Any, list] = {
    "id": ["j", "job-1", "", "x" * 256, "x" * 257, "é" * 256, "é" * 257, 7],
    "state": ["FAILED", "failed", "CANCELLED by 12", "FAILED+", "+", "NODE_FAIL", " ", "COMPLETED x", "BOGUS"],
    "nodes": [["node-01"], ["node-01", "node-02"], ["node-01", 3], ("node-01", "node-02"), "node-01", [""]],
    "start": TIMES, "end": TIMES, "failed_node": NAMES,
    "exit_code": [0, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, "1:0", "-1", "1:", "12345678901", "1:0 ", 1.0],
    "tasks_per_node": [0, 1, 8, 10**6, 10**6 + 1, -1, 8.0, "8"],
    "ranks": [{"0": "node-01"}, {0: "node-01", 9: "node-02"}, {"x": "node-01"}, {"-1": "node-01"},
              {"1234567890": "node-01"}, {"123456789": "node-01"}, {"0": "node-09"}, {True: "node-01"},
              {"0": 1}, {"٣": "node-01"}, [["0", "node-01"]]],
    "allocation_failure": [{"allocation_id": "77", "state": "NODE_FAIL"},
                           {"allocation_id": "77", "state": "NODE_FAIL", "failed_node": "node-02", "source": "slurm",
                            "time": "2026-06-01T03:10:00Z"},
                           {"allocation_id": "", "state": "NODE_FAIL"}, {"allocation_id": "77"},
                           {"allocation_id": "77", "state": "NODE_FAIL", "time": datetime(2026, 6, 1, 3)},
                           {"allocation_id": "77", "state": "NODE_FAIL", "source": None},
                           {"allocation_id": "77", "state": "NODE_FAIL", "extra": 1}],
    "execution_cancellation": [{"record_id": "job-1", "cancelled_by": "ops", "source_time": "2026-06-01T03:10:00Z"},
                               {"record_id": "other", "cancelled_by": "ops", "source_time": "2026-06-01T03:10:00Z"},
                               {"record_id": "job-1", "cancelled_by": "", "source_time": "2026-06-01T03:10:00Z"},
                               {"record_id": "job-1", "cancelled_by": "ops"},
                               {"record_id": "job-1", "cancelled_by": "ops", "source_time": None},
                               {"record_id": "job-1", "cancelled_by": "ops", "source_time": date(2026, 6, 1)}],
    "extra_key": [1], 3: [1],
}
SUBFIELDS = {"allocation_id": NAMES, "state": NAMES, "failed_node": NAMES, "source": NAMES, "time": TIMES,
             "record_id": ["job-1", "j", ""], "cancelled_by": NAMES, "source_time": TIMES}
BASE = {"id": "job-1", "state": "FAILED", "nodes": ["node-01", "node-02"], "tasks_per_node": 8,
        "start": datetime(2026, 6, 1, 3, tzinfo=timezone.utc), "end": "2026-06-01T03:31:10Z", "exit_code": "1:0",
        "ranks": {"0": "node-01", "8": "node-02"}, "failed_node": "node-02"}


def _one_change() -> list[dict]:
    """BASE with one field replaced by each of its boundary values and each odd scalar, or removed;
    and each scheduler table with one key replaced the same way."""
    out = [dict(BASE)] + [{k: v for k, v in BASE.items() if k != gone} for gone in BASE]
    for k, edges in EDGES.items():
        out += [{**BASE, k: v} for v in [*edges, *SCALARS]]
    for table in ("allocation_failure", "execution_cancellation"):
        full = EDGES[table][1] if table == "allocation_failure" else EDGES[table][0]
        for sub in full:
            out += [{**BASE, table: {**full, sub: v}} for v in [*SUBFIELDS[sub], *SCALARS]]
            out.append({**BASE, table: {k: v for k, v in full.items() if k != sub}})
    return out


ONE_CHANGE = _one_change()


@pytest.mark.parametrize("i", range(len(ONE_CHANGE)))
def test_one_field_off_a_valid_record(i):
    rec = ONE_CHANGE[i]
    assert via_parse(rec) == via_model(rec)
    plain = plain_record(rec)
    if plain is not None:
        assert via_model(rec)[0] == "ok" or isinstance(_to_jobinfo_error(plain), JobRecordError)


def test_the_one_change_records_reach_both_readers():
    accepted = sum(plain_record(r) is not None for r in ONE_CHANGE)
    assert 50 < accepted < len(ONE_CHANGE) - 200  # both ways taken: the plain reader and the model's verdict


def near(edges: list) -> st.SearchStrategy:
    """A field's boundary values, or anything."""
    return st.one_of(st.sampled_from(edges), scalars)


FIELDS = {k: near(v) for k, v in EDGES.items()}
FIELDS["allocation_failure"] = st.one_of(near(EDGES["allocation_failure"]), tables(
    {k: near(SUBFIELDS[k]) for k in ("allocation_id", "state", "failed_node", "source", "time")}))
FIELDS["execution_cancellation"] = st.one_of(near(EDGES["execution_cancellation"]), tables(
    {k: near(SUBFIELDS[k]) for k in ("record_id", "cancelled_by", "source_time")}))
FIELDS["nodes"] = st.one_of(near(EDGES["nodes"]), node_lists)
FIELDS["ranks"] = st.one_of(near(EDGES["ranks"]), rank_maps)


@st.composite
def records(draw) -> dict:
    """A valid record with a few fields replaced (a boundary value, anything) or removed."""
    rec = dict(BASE) if draw(st.booleans()) else {}
    for k in draw(st.lists(st.sampled_from(list(FIELDS)), unique=True, max_size=4)):
        if k in rec and draw(st.integers(0, 5)) == 0:
            del rec[k]
        else:
            rec[k] = draw(FIELDS[k])
    return rec


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records())
def test_parse_job_record_says_what_the_model_says(rec):
    assert via_parse(rec) == via_model(rec)
    plain = plain_record(rec)
    if plain is not None:
        assert via_model(rec)[0] == "ok" or isinstance(_to_jobinfo_error(plain), JobRecordError)


def _to_jobinfo_error(plain: Any) -> Exception | None:
    try:
        jr.to_jobinfo(plain)
    except JobRecordError as e:
        return e
    return None


VALID = [
    {"id": "j", "state": "CANCELLED by 42", "nodes": ["a", "b"], "ranks": {"0": "a", 1: "b"}, "failed_node": "b",
     "exit_code": -9, "start": "2026-06-01T03:00:00+02:00", "end": date(2026, 6, 2)},
    {"id": "j", "nodes": ["a"], "execution_cancellation": {"record_id": "j", "cancelled_by": "ops",
                                                           "source_time": "2026-06-01T03:00:00Z"},
     "allocation_failure": {"allocation_id": "77", "state": "NODE_FAIL", "failed_node": "a",
                            "time": datetime(2026, 6, 1, 3, tzinfo=UTC2)}},
    {"id": "j", "execution_cancellation": {"record_id": "other", "cancelled_by": "ops",
                                           "source_time": "2026-06-01T03:00:00Z"}},  # the builder's RK506
]


@pytest.mark.parametrize("rec", VALID)
def test_plain_reader_takes_well_formed_records_and_agrees(rec):
    assert plain_record(rec) is not None
    assert via_parse(rec) == via_model(rec)


class _Text(str):
    pass


class _Stamp(datetime):
    pass


DECLINED = [
    {"id": "j", "nodes": ("a",)},  # a tuple: the model's lax list decides
    {"id": _Text("j")},  # subclasses: the model decides what it makes of them
    {"id": "j", "exit_code": _Text("1:0")},
    {"id": "j", "start": _Stamp(2026, 6, 1, 3, tzinfo=timezone.utc)},
    {"id": "j", "tasks_per_node": True},
    {"id": "j", "exit_code": 1.0},
    {"id": "j", "ranks": {"0": "zz"}},
    {"id": "j", "end": "2026-06-01T03:00:00Z", "start": "2026-06-01T04:00:00Z"},
    {"id": "j", "surprise": 1},
    {"id": "j", "execution_cancellation": {"record_id": "j", "cancelled_by": "ops"}},
    {"nodes": ["a"]},
]


@pytest.mark.parametrize("rec", DECLINED)
def test_plain_reader_leaves_everything_else_to_the_model(rec):
    assert plain_record(rec) is None
    assert via_parse(rec) == via_model(rec)


def test_every_example_and_job_test_record_is_read_without_the_model(monkeypatch):
    from rulekit.analysis.testing import job_from_mapping
    from rulekit.inputs.jobdir import read_job_dir
    from rulekit.rules.loader import load_corpus

    seen: list[tuple[dict, bool]] = []
    real = jr.plain_record

    def spy(data):
        got = real(data)
        seen.append((dict(data), got is not None))
        return got

    monkeypatch.setattr(jr, "plain_record", spy)
    dirs = sorted(p.parent for p in (ROOT / "examples").rglob("job.toml"))
    assert len(dirs) >= 20
    for d in dirs:
        read_job_dir(d)
    assert len(seen) == len(dirs)
    cases = load_corpus(None).engine.ruleset.job_tests
    assert len(cases) >= 10
    for case in cases:
        job_from_mapping(case.job)
    assert len(seen) == len(dirs) + len(cases)
    declined = [rec for rec, ok in seen if not ok]
    assert declined == []


JOB_TOML_ERRORS = [
    ("job = 3\n", ["1:1: `job` must be a table: write `[job]`"]),
    ('[job]\nid = "x"\n[job.allocation_failure]\nallocation_id = "1"\nstate = "NODE_FAIL"\n\n'
     '[allocation_failure]\nallocation_id = "1"\nstate = "NODE_FAIL"\n',
     ["7:1: `allocation_failure` is given twice (in [job] and as [allocation_failure])"]),
    ('[job]\nid = "x"\nnodes = ["n1"]\ntasks_per_node = 0\n[job.ranks]\n0 = "n9"\n',
     ["4:1: `tasks_per_node`: must be a positive integer (input should be greater than or equal to 1)",
      "6:1: `ranks`: rank 0 is mapped to 'n9', which is not in `nodes`"]),
]


@pytest.mark.parametrize("text,want", JOB_TOML_ERRORS)
def test_job_toml_errors_are_located_as_before(tmp_path, text, want):
    """The TOML locator is built only for an error now: each error still at its key."""
    from rulekit.diagnostics import RulekitError
    from rulekit.inputs.jobdir import read_job_toml

    (tmp_path / "job.toml").write_text(text)
    with pytest.raises(RulekitError) as e:
        read_job_toml(tmp_path / "job.toml", "d", [])
    got = [f"{d.span.line}:{d.span.col}: {d.message}" for d in e.value.diagnostics]
    assert got == want
    assert all(d.code == "RK502" for d in e.value.diagnostics)
