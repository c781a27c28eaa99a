"""Metric observations and metric rules: evaluation semantics, the front-ends'
located errors, observations.jsonl records, and the job record schema shared by
job.toml and the Service."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomlkit

from rulekit.diagnostics import RulekitError
from rulekit.engine.jobrun import attribute_dir
from rulekit.engine.metrics import evaluate
from rulekit.engine.session import Session
from rulekit.inputs.jobdir import read_job_dir
from rulekit.inputs.jobinfo import JobInfo
from rulekit.inputs.jobrecord import JobRecordError, parse_job_record
from rulekit.inputs.metrics import MetricSeries
from rulekit.rules.loader import load_corpus
from rulekit.rules.model import Emit, MetricCondition, MetricRule
from rulekit.rules.toml_frontend import parse_rules
from rulekit.service.schema import AttributeRequest


def rule(when: str, for_s: float = 0.0, window: float | None = None) -> MetricRule:
    agg, op, thr = when.split()
    return MetricRule("r", "t", None, "m", MetricCondition(agg, op, float(thr), for_s, window),  # type: ignore[arg-type]
                      Emit("interesting_node", "S"))


@pytest.mark.parametrize("when, for_s, window, samples, fires_at", [
    ("value >= 90", 0, None, [(0, 80), (10, 91)], 10),
    ("value >= 90", 60, None, [(0, 91), (30, 95), (59, 92), (90, 93)], 90),
    ("value >= 90", 60, None, [(0, 91), (30, 80), (60, 95), (90, 92)], None),  # broken by a dip
    ("value < 10", 0, None, [(0, 50), (5, 9)], 5),
    ("rate > 10", 0, None, [(0, 0), (10, 50), (20, 200)], 20),  # 5/s then 15/s
    ("rate > 10", 0, None, [(0, 1000), (10, 50)], None),  # a counter reset: 5/s, not negative
    ("rate > 10", 0, 60, [(0, 0), (30, 600), (60, 610)], 30),
    ("increase > 100", 0, 300, [(0, 0), (100, 40), (200, 80), (300, 120)], 300),
    ("increase > 100", 0, 100, [(0, 0), (100, 40), (200, 80), (300, 120)], None),
    ("increase > 0", 0, None, [(0, 3), (30, 3)], None),
    ("value == 79", 0, None, [(0, 0), (1, 79)], 1),
])
def test_metric_condition_semantics(when, for_s, window, samples, fires_at):
    f = evaluate(rule(when, for_s, window), samples)
    assert (f.time if f else None) == fires_at


BAD = [
    ('when = "rate >> 10"', "RK111", 'when = "rate >> 10"'),
    ('when = "speed > 10"', "RK111", "unknown aggregate"),
    ('when = "rate > 10"\nfor = "a minute"', "RK111", "duration"),
    ('when = "value > 10"\nwindow = "5m"', "RK111", "applies to rate and increase"),
    ('when = "rate > 10"\nlables = { a = "b" }', "RK101", "unknown key"),
]


@pytest.mark.parametrize("extra, code, words", BAD)
def test_toml_metric_rule_errors_are_located(extra, code, words):
    text = f'[[metric_rule]]\nname = "R"\nmetric = "m"\n{extra}\nemit = {{ type = "interesting_node", symptom = "S" }}\n'
    _, diags = parse_rules(text, "m.toml")
    d = next(d for d in diags if d.code == code)
    assert d.span.line >= 4 and (words in d.message or words in text.splitlines()[d.span.line - 1])


def test_dsl_metric_rule_errors_are_located(tmp_path):
    (tmp_path / "m.rule").write_text('symptom "S" {\n  outcome network\n  sub_domain roce\n  rank 1\n}\n\n'
                                     'metric_rule R {\n  metric "m"\n  when rate > 10 for 99999999d\n'
                                     '  emit interesting_node "S"\n}\n')
    load = load_corpus([tmp_path])
    d = next(d for d in load.diagnostics if d.code == "RK111")
    assert (d.span.line, d.span.col) == (9, 22)


def test_metric_rule_needs_a_registered_symptom(tmp_path):
    (tmp_path / "m.toml").write_text('[[metric_rule]]\nname = "R"\nmetric = "m"\nwhen = "value > 1"\n'
                                     'emit = { type = "interesting_node", symptom = "NOPE" }\n')
    load = load_corpus([tmp_path])
    assert any(d.code == "RK203" and d.span.line == 5 for d in load.diagnostics)


def test_labels_select_series_and_events_land_on_the_node(bundled):
    with Session(bundled, JobInfo(id="j", nodes=("n1", "n2"))) as s:
        s.ingest_metrics([MetricSeries.of("n2", "DCGM_FI_DEV_XID_ERRORS", [(0, 0), (15, 48)], {"gpu": "1"}),
                          MetricSeries.of("n1", "DCGM_FI_DEV_XID_ERRORS", [(0, 0), (15, 0)], {"gpu": "1"}),
                          MetricSeries.of("n1", "unrelated_metric", [(0, 0), (15, 1e9)])])
        s.ingest(MetricSeries.of("n1", "DCGM_FI_DEV_GPU_TEMP", [(0, 95), (60, 96), (120, 97)]))
        r = s.attribute()
    assert sorted((b["node"], tuple(b["symptoms"])) for b in r["interesting_nodes"]) == [
        ("n1", ("performance_gpu_temperature_high",)), ("n2", ("node_metric_gpu_xid",))]
    ev = next(e for e in r["evidence"] if e["node"] == "n2")
    assert ev["timestamp"] == "1970-01-01T00:00:15Z" and ev["source"] == 'DCGM_FI_DEV_XID_ERRORS{gpu="1"}@n2'


def test_observations_jsonl_metric_records(tmp_path, bundled):
    root = tmp_path / "job"
    root.mkdir()
    (root / "job.toml").write_text('[job]\nid = "m"\nnodes = ["n1", "n2"]\n')
    recs = [{"kind": "metric", "node": "n2", "name": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "labels": {"gpu": "0"},
             "samples": [[0, 0], [30, 2]]},
            {"kind": "metric", "node": "n1", "name": "x", "samples": [[0, "hot"]]},
            {"kind": "core_dump", "node": "n1"},
            {"source": "syslog", "node": "n1", "line": "hello"}]
    (root / "observations.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    jd = read_job_dir(root)
    assert [m.name for m in jd.metrics] == ["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"]
    assert [(d.code, d.span.line) for d in jd.notes] == [("RK503", 2), ("RK503", 3)]
    r = attribute_dir(bundled, root)
    assert r["interesting_nodes"] == [{"node": "n2", "symptoms": ["node_metric_gpu_ecc_dbe"]}]


def test_metric_rules_fire_in_the_bundled_job_tests(bundled):
    from rulekit.analysis.testing import run_job_tests

    cases = [c for c in bundled.job_tests if c.metrics]
    assert len(cases) >= 2
    results = run_job_tests(bundled, cases)
    assert all(r.passed for r in results), [r.mismatches for r in results]
    assert {"node-metric-roce-adp-retrans", "node-metric-gpu-temperature", "node-metric-gpu-xid"} <= set().union(
        *(r.fired for r in results))


# ---- one schema for job.toml and the Service -------------------------------------------------

RECORDS = [
    {"id": "1", "state": "FAILED", "nodes": ["a", "b"], "tasks_per_node": 4, "ranks": {"0": "a"},
     "start": "2026-06-01T03:00:00Z", "end": "2026-06-01T06:00:00+02:00", "failed_node": "b", "exit_code": 1},
    {"id": "1", "state": "CANCELLED by 42", "exit_code": "0:15"},
    {"id": "1", "state": "EXPLODED"},
    {"id": "1", "state": 5},
    {"id": "1", "nodes": ["a", 7]},
    {"id": "1", "tasks_per_node": 0},
    {"id": "1", "nodes": ["a"], "ranks": {"0": "b"}},
    {"id": "1", "ranks": {"first": "a"}},
    {"id": "1", "start": "yesterday"},
    {"id": "1", "start": "2026-06-01T03:00:00"},
    {"id": "1", "failed_node": 7},
    {"id": "1", "exit_code": [1, 2]},
    {"id": "1", "exit_code": "boom"},
    {"id": "1", "colour": "blue"},
    {"id": "1", "allocation_failure": {"allocation_id": "a1", "state": "NODE_FAIL", "time": "2026-06-01T03:00:00Z"}},
    {"id": "1", "allocation_failure": {"state": "NODE_FAIL"}},
    {"id": "1", "execution_cancellation": {"record_id": "2", "cancelled_by": "u", "source_time": "2026-06-01T03:00:00Z"}},
]


def _accepts_toml(tmp_path: Path, rec: dict, i: int) -> bool:
    root = tmp_path / f"j{i}"
    root.mkdir()
    job = {k: v for k, v in rec.items() if k not in ("allocation_failure", "execution_cancellation")}
    doc = {"job": job, **{k: v for k, v in rec.items() if k in ("allocation_failure", "execution_cancellation")}}
    (root / "job.toml").write_text(tomlkit.dumps(doc))
    try:
        read_job_dir(root)
        return True
    except RulekitError as e:
        assert all(d.span.line > 1 or d.span.col > 1 or len((root / "job.toml").read_text().splitlines()) == 1
                   for d in e.diagnostics), [str(d) for d in e.diagnostics]
        return False


def _accepts_service(rec: dict) -> bool:
    from pydantic import ValidationError

    try:
        AttributeRequest.model_validate_json(json.dumps({"job": rec})).job.to_jobinfo()
        return True
    except (ValidationError, JobRecordError):
        return False


@pytest.mark.parametrize("i", range(len(RECORDS)))
def test_job_toml_and_the_service_accept_and_reject_the_same_records(tmp_path, i):
    rec = RECORDS[i]
    try:
        parse_job_record(rec)
        lib = True
    except JobRecordError:
        lib = False
    assert _accepts_toml(tmp_path, rec, i) == lib == _accepts_service(rec), rec
    assert lib == (i in (0, 1, 14)), rec
