"""Rules judged by production, with a store built from the Blueprint example: per-rule
stats, operator feedback (precision, kept across re-attribution, bad input refused),
the store migration that adds it, and a backtest that says which nodes a changed
corpus would have drained."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from rulekit.blueprint.backtest import backtest, stored_verdicts
from rulekit.blueprint.config import load_config
from rulekit.blueprint.orchestrator import Attributor, run
from rulekit.blueprint.rulestats import FeedbackError, feedback_of, record_feedback, rule_stats
from rulekit.blueprint.store import VERSION, open_db, upsert
from rulekit.rules.loader import bundled_rules_path, load_corpus

REPO = Path(__file__).resolve().parent.parent
STATIC = REPO / "examples" / "blueprint" / "static"

EXTRA = """
[[symptom]]
name = "TEST_LINK_STATE_FAULT"
outcome = "hardware"
sub_domain = "gpu"
rank = 990
blame = "node"
action = "inspect"
docs = "reads a healthy port-state line as a fault (a bad change to backtest)"

[[extractor]]
name = "TestLinkStateFault"
match_re = 'mlx5_core .* port 1 state: ACTIVE'
source = "syslog"
docs = "a bad change"
emit = { type = "bad_node", symptom = "TEST_LINK_STATE_FAULT" }
"""


class _Collect:
    def __init__(self):
        self.results = []

    def write(self, r):
        self.results.append(r)

    def close(self):
        pass


@pytest.fixture(scope="module")
def results(bundled):
    out = _Collect()
    rep = run(load_config(STATIC), Attributor(engine=bundled), [out])
    # the outputs get each attempt's kept lines; the run's report (every attempt, in memory) does not
    assert all("kept_logs" in r for r in out.results) and not any("kept_logs" in r for r in rep.results)
    return out.results


@pytest.fixture
def db(tmp_path, results):
    path = tmp_path / "bp.db"
    con = open_db(path)
    for r in results:
        upsert(con, r)
    return path, con


def test_stats_count_fired_and_root_per_rule(db, results):
    _, con = db
    st = rule_stats(con)
    assert st["attempts"] == len(results) == 4
    by = {r["rule"]: r for r in st["rules"]}
    # the expected numbers, from the results themselves
    roots: dict[str, int] = {}
    fired: dict[str, set[str]] = {}
    for r in results:
        rc = (r["verdict"].get("root_cause") or {}).get("rule")
        if rc:
            roots[rc] = roots.get(rc, 0) + 1
        for e in r["verdict"]["evidence"]:
            fired.setdefault(e["rule"], set()).add(r["key"])
    assert {k: v["root"] for k, v in by.items() if v["root"]} == roots
    assert {k: v["fired"] for k, v in by.items()} == {k: len(v) for k, v in fired.items()}
    assert by["HandleXidBurstEvents"]["root"] == 2 and "XID-149-NVLINK_SIGNAL_INTEGRITY" in \
        by["HandleXidBurstEvents"]["symptoms"]
    # a window that ends before every attempt holds none
    assert rule_stats(con, until=0)["attempts"] == 0 and rule_stats(con, until=0)["rules"] == []


def test_feedback_gives_precision_and_survives_reattribution(db, results):
    _, con = db
    record_feedback(con, "train-0142#0", "confirmed", "alice")
    record_feedback(con, "train-0155", "wrong", "bob", outcome="network", nodes=["node-03"], note="cable")
    by = {r["rule"]: r for r in rule_stats(con)["rules"]}
    x = by["HandleXidBurstEvents"]
    assert (x["confirmed"], x["wrong"], x["precision"]) == (1, 1, 0.5)
    # a later judgement of the same attempt replaces the earlier one in the counts
    record_feedback(con, "train-0155#0", "confirmed", "carol")
    assert {r["rule"]: r for r in rule_stats(con)["rules"]}["HandleXidBurstEvents"]["precision"] == 1.0
    rows = feedback_of(con, "train-0155#0")
    assert [(r["verdict"], r["who"]) for r in rows] == [("wrong", "bob"), ("confirmed", "carol")]
    assert rows[0]["nodes"] == ["node-03"] and rows[0]["judged_rule"] == "HandleXidBurstEvents"
    # attributing the attempt again keeps what operators said
    upsert(con, next(r for r in results if r["key"] == "train-0155#0"))
    assert len(feedback_of(con, "train-0155#0")) == 2


@pytest.mark.parametrize("kw, field", [
    ({"attempt": "no-such-job", "verdict": "wrong"}, "attempt"),
    ({"attempt": "train-0142#0", "verdict": "maybe"}, "verdict"),
    ({"attempt": "train-0142#0", "verdict": "confirmed", "outcome": "network"}, "outcome"),
])
def test_bad_feedback_is_refused_with_its_field(db, kw, field):
    _, con = db
    with pytest.raises(FeedbackError, match=f"^{field}"):
        record_feedback(con, who="x", **kw)
    assert con.execute("SELECT count(*) FROM feedback").fetchone()[0] == 0


def test_an_older_store_migrates_to_feedback(tmp_path, results):
    path = tmp_path / "old.db"
    con = open_db(path, upto=3)
    upsert(con, results[0])
    con.close()
    con = open_db(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == VERSION == 5
    record_feedback(con, results[0]["key"], "confirmed", "alice")
    assert rule_stats(con)["attempts"] == 1


def test_backtest_names_the_nodes_a_change_would_drain(db, tmp_path):
    _, con = db
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "extra.toml").write_text(EXTRA)
    changed = load_corpus([bundled_rules_path(), extra]).engine
    assert changed is not None
    rep = backtest(load_config(STATIC), changed, stored_verdicts(con))
    assert rep["rerun"] == 4 and rep["not_rerun"] == []
    moved = {c["key"]: c for c in rep["changed"]}
    assert set(moved) == {"train-0142#0", "train-0155#0"}
    c = moved["train-0142#0"]
    assert c["before"]["root_symptom"] == "XID-149-NVLINK_SIGNAL_INTEGRITY"
    assert c["after"]["root_symptom"] == "TEST_LINK_STATE_FAULT"
    assert "node-03" in c["nodes_entering"] and rep["nodes_entering"]["node-03"] == ["train-0142#0", "train-0155#0"]
    assert rep["unchanged"] == 2


def test_backtest_reports_attempts_it_cannot_rerun(db, bundled):
    _, con = db
    stored = stored_verdicts(con)
    stored["gone-job#0"] = {"outcome": "hardware", "sub_domain": None, "root_symptom": None, "root_rule": None,
                            "bad_nodes": []}
    rep = backtest(load_config(STATIC), bundled, stored)
    assert rep["changed"] == [] and rep["unchanged"] == 4
    assert rep["not_rerun"] == [{"key": "gone-job#0", "why": "the config no longer finds this attempt"}]


def test_cli_stats_feedback_and_errors(db):
    path, con = db
    con.close()
    cli = [sys.executable, "-m", "rulekit"]
    p = subprocess.run(cli + ["blueprint", "feedback", "--db", str(path), "train-0150#0", "--wrong", "--outcome",
                              "infrastructure", "--who", "bob"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["judged_rule"] == "Mlx5LinkDown"
    p = subprocess.run(cli + ["rules", "stats", "--db", str(path), "--format", "json", "--rule", "Mlx5LinkDown"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    (row,) = json.loads(p.stdout)["rules"]
    assert (row["root"], row["wrong"], row["precision"]) == (1, 1, 0.0)
    p = subprocess.run(cli + ["rules", "stats", "--db", str(path)], capture_output=True, text=True)
    assert "Mlx5LinkDown" in p.stdout and "0%" in p.stdout
    p = subprocess.run(cli + ["blueprint", "feedback", "--db", str(path), "train-0150#0", "--who", "x"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "--correct or --wrong" in p.stderr
    p = subprocess.run(cli + ["rules", "stats", "--db", str(path.parent / "none.db")], capture_output=True, text=True)
    assert p.returncode == 2 and "no such database" in p.stderr and "Traceback" not in p.stderr
    bad = path.parent / "bad.db"
    bad.write_text("not a database")
    p = subprocess.run(cli + ["blueprint", "feedback", "--db", str(bad), "x#0", "--correct", "--who", "a"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "not a rulekit result database" in p.stderr
    assert sqlite3.connect(path).execute("SELECT count(*) FROM feedback").fetchone()[0] == 1
