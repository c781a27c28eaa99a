"""From a result store back to job directories: the lines the store keeps of each
attempt (bounded, line numbers kept, schema v5 migrating a v4 store), a judged attempt
exported as a regression test (`blueprint export-test`), and `rulekit diff BASE HEAD
--db` re-attributing the stored attempts with two rule revisions, from the kept lines
or through the Blueprint config.  The store is built from the bundled Blueprint example."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rulekit.blueprint.backtest import backtest, stored_verdicts
from rulekit.blueprint.config import load_config
from rulekit.blueprint.exporttest import ExportError, expectation, write_job_dir
from rulekit.blueprint.keptlogs import from_context, keep
from rulekit.blueprint.rulestats import feedback_of, record_feedback
from rulekit.blueprint.store import VERSION, get_result, kept_logs, open_db, upsert
from rulekit.inputs.jobdir import read_job_dir
from rulekit.inputs.observation import Observation
from rulekit.rules.loader import bundled_rules_path, load_corpus

sys.path.insert(0, str(Path(__file__).parent))
from test_rule_stats import EXTRA, db, results  # noqa: E402,F401  (the store built from the example)

REPO = Path(__file__).resolve().parent.parent
STATIC = REPO / "examples" / "blueprint" / "static"
CLI = [sys.executable, "-m", "rulekit"]


def _verdict(result: dict) -> tuple:
    rc = result.get("root_cause") or {}
    return result["outcome"], rc.get("symptom"), rc.get("node"), sorted(b["node"] for b in result["bad_nodes"])


def test_the_store_keeps_each_attempts_lines_whole_within_its_budget(db, results):
    _, con = db
    kept = kept_logs(con, "train-0142#0")
    assert kept and all(k["complete"] for k in kept)
    app = next(k for k in kept if k["name"] == "applog/train.log")
    text = (STATIC / "evidence" / "train-0142" / "applog" / "train.log").read_text().split("\n")
    assert app["runs"] == [[1, text[:-1] if text[-1] == "" else text]]
    # the result JSON stored and printed does not carry them
    assert "kept_logs" not in get_result(con, "train-0142#0")


def test_past_the_budget_only_the_evidence_windows_are_kept_at_their_numbers(tmp_path):
    lines = [f"line {i}" for i in range(1, 201)]
    o = Observation(source="syslog", node="n1", label="syslog/n1.log", lines=lines)
    ctx = [{"source": "syslog/n1.log", "line_num": 50, "first": 47, "lines": lines[46:53]},
           {"source": "syslog/n1.log", "line_num": 52, "first": 49, "lines": lines[48:55]}]
    (k,) = keep([o], ctx, budget=100)
    assert not k["complete"] and k["runs"] == [[47, lines[46:55]]]
    (whole,) = keep([o], ctx)
    assert whole["complete"] and whole["runs"] == [[1, lines]]
    out = tmp_path / "job"
    write_job_dir(out, {"key": "j#0", "job_id": "j", "context": {"nodes": ["n1"]}}, [k], {"outcome": "hardware"})
    written = (out / "syslog" / "n1.log").read_text().split("\n")
    assert written[49] == "line 50" and written[0] == "" and len(written) == 56


def test_a_v4_store_migrates_and_its_attempts_export_from_the_evidence_windows(tmp_path, results):
    path = tmp_path / "v4.db"
    con = open_db(path, upto=4)
    for r in results:
        upsert(con, r)
    con.close()
    con = open_db(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == VERSION == 5
    assert kept_logs(con, "train-0142#0") is None  # written before the store kept lines
    sparse = from_context(get_result(con, "train-0142#0"))
    assert sparse and not any(k["complete"] for k in sparse)
    node02 = next(k for k in sparse if k["name"] == "syslog/node-02.log")
    assert node02["node"] == "node-02" and any(3 in range(f, f + len(ls)) for f, ls in node02["runs"])
    # writing again under v5 keeps them
    upsert(con, results[0])
    assert kept_logs(con, results[0]["key"])


def test_export_of_a_confirmed_attempt_attributes_as_stored(db, results, tmp_path):
    path, con = db
    record_feedback(con, "train-0142#0", "confirmed", "alice")
    con.close()
    out = tmp_path / "tests" / "train-0142"
    p = subprocess.run(CLI + ["blueprint", "export-test", "train-0142", "--db", str(path), "--out", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    stored = next(r for r in results if r["key"] == "train-0142#0")["verdict"]
    assert json.loads((out / "expected.json").read_text()) == {
        "outcome": "hardware", "sub_domain": "nvlink", "root_cause": "XID-149-NVLINK_SIGNAL_INTEGRITY",
        "root_node": "node-02", "bad_nodes": ["node-02"]}
    jd = read_job_dir(out)  # the job directory reader takes it: job.toml, applog/, syslog/
    assert jd.job.id == "train-0142" and len(jd.job.nodes) == 4
    p = subprocess.run(CLI + ["attribute", str(out), "--format", "json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    (got,) = json.loads(p.stdout)
    assert _verdict(got) == _verdict(stored)
    p = subprocess.run(CLI + ["test", "-e", str(out.parent), "-k", "example"], capture_output=True, text=True)
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout + p.stderr


def test_a_wrong_verdict_becomes_a_failing_regression_test(db, tmp_path):
    path, con = db
    record_feedback(con, "train-0150#0", "wrong", "bob", outcome="infrastructure", symptom="FM_NOT_RUNNING",
                    nodes=["node0004"], note="fabric manager was down")
    con.close()
    out = tmp_path / "regress" / "train-0150"
    p = subprocess.run(CLI + ["blueprint", "export-test", "train-0150#0", "--db", str(path), "--out", str(out),
                              "--configs", str(STATIC)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert json.loads((out / "expected.json").read_text()) == {
        "outcome": "infrastructure", "root_cause": "FM_NOT_RUNNING", "bad_nodes": ["node0004"]}
    assert (out / "syslog" / "node0004.log").read_text() == \
        (STATIC / "evidence" / "train-0150" / "syslog" / "node0004.log").read_text()
    p = subprocess.run(CLI + ["test", "-e", str(out.parent), "-k", "example"], capture_output=True, text=True)
    assert p.returncode == 1 and "expected 'infrastructure', got 'network'" in p.stdout, p.stdout + p.stderr


def test_export_refusals_name_the_problem(db, tmp_path):
    path, con = db
    record_feedback(con, "train-0155#0", "wrong", "bob")
    con.close()
    cases = [(["train-0151"], "has no feedback"), (["train-0155"], "says the verdict is wrong but not what is right"),
             (["nope#3"], "no attempt 'nope#3'")]
    for args, msg in cases:
        p = subprocess.run(CLI + ["blueprint", "export-test", *args, "--db", str(path), "--out", str(tmp_path / "o")],
                           capture_output=True, text=True)
        assert p.returncode == 2 and msg in p.stderr and "Traceback" not in p.stderr, p.stderr
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("")
    with pytest.raises(ExportError, match="not an empty folder"):
        write_job_dir(busy, {"key": "j#0", "job_id": "j"}, [], {"outcome": "hardware"})
    assert not (tmp_path / "o").exists()


def test_untrusted_names_stay_inside_the_job_directory(tmp_path):
    kept = [{"source": "syslog", "node": "../../evil", "format": "text", "name": "syslog/x", "complete": True,
             "runs": [[1, ["kernel: boom"]]]},
            {"source": "applog", "node": None, "format": "text", "name": "applog/../../../etc/passwd.log",
             "complete": True, "runs": [[1, ["Traceback"]]]}]
    out = tmp_path / "a" / "job"
    notes = write_job_dir(out, {"key": "j#0", "job_id": 'j"\n[x]', "context": {"nodes": ["n"]}}, kept,
                          {"outcome": "application"})
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["applog/passwd.log", "expected.json", "job.toml", "observations.jsonl"]
    assert [p for p in tmp_path.rglob("*") if p.is_file() and out not in p.parents] == []
    assert any("path separator" in n for n in notes)
    rec = json.loads((out / "observations.jsonl").read_text())
    assert rec == {"source": "syslog", "lines": ["kernel: boom"], "node": "../../evil"}
    assert read_job_dir(out).job.id == 'j"\n[x]'  # the id is a TOML string, not TOML


def test_expectation_of_a_wrong_judgement_keeps_only_what_was_said():
    j = {"id": 1, "verdict": "wrong", "outcome": "application", "symptom": None, "nodes": []}
    assert expectation({}, j) == {"outcome": "application"}


def test_diff_db_moves_verdicts_per_node_from_the_kept_lines_and_the_config(db, tmp_path, bundled):
    path, con = db
    head = tmp_path / "head"
    head.mkdir()
    (head / "extra.toml").write_text(EXTRA)
    changed = load_corpus([bundled_rules_path(), head]).engine
    stored = stored_verdicts(con)
    from_store = backtest(None, changed, stored, base=bundled, con=con)
    from_config = backtest(load_config(STATIC), changed, stored, base=bundled)
    for rep in (from_store, from_config):
        assert rep["rerun"] == 4 and rep["not_rerun"] == []
        assert {c["key"] for c in rep["changed"]} == {"train-0142#0", "train-0155#0"}
        assert rep["nodes_entering"]["node-03"] == ["train-0142#0", "train-0155#0"]
    assert from_store["changed"] == from_config["changed"]
    # the same revision on both sides moves nothing
    same = backtest(None, bundled, stored, base=bundled, con=con)
    assert same["changed"] == [] and same["unchanged"] == 4
    con.close()
    base = tmp_path / "base"
    base.mkdir()
    (base / "extra.toml").write_text("# nothing yet\n")
    p = subprocess.run(CLI + ["diff", str(base), str(head), "--rules", str(head), "--db", str(path), "--format",
                              "json"], capture_output=True, text=True)
    assert p.returncode == 1, p.stderr
    rep = json.loads(p.stdout)
    assert rep["nodes_entering"] == from_store["nodes_entering"] and rep["head"].endswith("head")
    p = subprocess.run(CLI + ["diff", str(base), str(head), "--rules", str(head), "--configs", str(STATIC)],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "go with --db" in p.stderr


def test_attempts_stored_without_lines_are_not_rerun(tmp_path, results, bundled):
    path = tmp_path / "v4.db"
    con = open_db(path, upto=4)
    upsert(con, results[0])
    con.close()
    con = open_db(path)
    rep = backtest(None, bundled, stored_verdicts(con), base=bundled, con=con)
    assert rep["rerun"] == 0 and rep["not_rerun"][0]["key"] == results[0]["key"]
    assert "kept no logs" in rep["not_rerun"][0]["why"]
    assert feedback_of(con, results[0]["key"]) == []
