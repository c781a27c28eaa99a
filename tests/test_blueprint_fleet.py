"""The fleet's memory with data: a store of attempts written by the real Blueprint
(static context, local logs, embedded engine, SQLite), then the verdicts that read it,
`rulekit fleet`, and the policy's pure parts (episodes, users, escalation, clearing,
the circuit breaker) on synthetic rows."""
from __future__ import annotations

import json
import sqlite3
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))

from rulekit.blueprint.config import load_config
from rulekit.blueprint.connectors.sqlite import SqliteOutput
from rulekit.blueprint.fleet import fleet_state, node_history
from rulekit.blueprint.fleet_memory import FleetMemory, read_fleet_state
from rulekit.blueprint.fleet_policy import FleetPolicy
from rulekit.blueprint.orchestrator import Attributor, run
from rulekit.blueprint.store import VERSION, NodeAttempt, node_attempts, open_ro
from rulekit.diagnostics import RulekitError

T0 = datetime(2026, 6, 1, tzinfo=timezone.utc)
SEGFAULT = "{when} {node} kernel: python3[12345]: segfault at 8 ip 00007f2c4a001234 sp 00007ffd12345678 error 4 in libnccl.so.2[7f2c49e00000+1c000000]"

# (job, user, day, nodes, state, the node whose syslog has the segfault)
HISTORY = [
    ("a1", "alice", 0, ["node-03", "node-07"], "FAILED", "node-07"),
    ("b1", "bob", 2, ["node-03", "node-07"], "FAILED", "node-07"),
    ("c1", "carol", 4, ["node-03", "node-07"], "FAILED", "node-07"),
    ("d1", "dave", 6, ["node-03", "node-07"], "FAILED", "node-07"),   # the next such failure: node-07 suspected
    ("e1", "erin", 6.1, ["node-03"], "FAILED", "node-03"),            # the same log on a clean node
    ("k1", "frank", 7, ["node-07"], "COMPLETED", None),              # three clean attempts on node-07 ...
    ("k2", "frank", 7.1, ["node-07"], "COMPLETED", None),
    ("k3", "frank", 7.2, ["node-07"], "COMPLETED", None),
    ("f1", "grace", 8, ["node-03", "node-07"], "FAILED", "node-07"),  # ... so it is cleared: the program's again
]


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_config(folder: Path, history=HISTORY, fleet_toml: str = "", t0: datetime = T0) -> Path:
    jobs = []
    for job, user, day, nodes, state, seg in history:
        start = t0 + timedelta(days=day)
        end = start + timedelta(hours=1)
        jobs.append(f'[[job]]\nid = "{job}"\nuser = "{user}"\nstate = "{state}"\nnodes = {json.dumps(nodes)}\n'
                    f'start = {_iso(start)}\nend = {_iso(end)}\n')
        if seg:
            d = folder / "evidence" / job / "syslog"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{seg}.log").write_text(SEGFAULT.format(when=(start + timedelta(minutes=50)).strftime("%b %d %H:%M:%S"),
                                                          node=seg) + "\n")
        else:
            (folder / "evidence" / job).mkdir(parents=True, exist_ok=True)
    (folder / "jobs").mkdir(parents=True, exist_ok=True)
    (folder / "jobs" / "history.toml").write_text("\n".join(jobs))
    (folder / "blueprint.toml").write_text(f'''
[[context]]
type = "static"
jobs = "jobs/history.toml"
[[logs]]
type = "local"
root = "evidence/{{job_id}}"
[[logs.files]]
source = "syslog"
glob = "syslog/{{node}}.log"
{fleet_toml}
''')
    return folder


def run_store(folder: Path, engine, db: Path, fleet: bool = True) -> dict[str, dict]:
    cfg = load_config(folder)
    out = SqliteOutput(db)
    try:
        rep = run(cfg, Attributor(engine=engine), [out], fleet=FleetMemory(db, cfg.fleet) if fleet else None)
    finally:
        out.close()
    assert not rep.context_failures and not rep.failed
    return {r["job_id"]: r["verdict"] for r in rep.results}


@pytest.fixture(scope="module")
def fleet_run(tmp_path_factory, bundled):
    folder = write_config(tmp_path_factory.mktemp("fleet"))
    db = folder / "results.db"
    return folder, db, run_store(folder, bundled, db)


def test_a_node_failing_ambiguously_for_three_users_is_named_suspected(fleet_run):
    _, _, v = fleet_run
    for job in ("a1", "b1"):  # no record yet, or one episode of one user: the program's segfault
        assert (v[job]["outcome"], v[job]["root_cause"]["symptom"]) == ("application", "PROCESS_SEGFAULT"), job
        assert v[job]["bad_nodes"] == []
    # the defaults make a suspect of 2 ambiguous episodes across 2 users: the third job is named already
    assert v["c1"]["bad_nodes"][0]["node"] == "node-07"
    d = v["d1"]
    assert (d["outcome"], d["sub_domain"]) == ("hardware", "node")
    assert d["bad_nodes"] == [{"node": "node-07", "symptoms": ["NODE_REPEATED_FAILURES"], "blame": "node",
                               "action": "inspect", "confidence": "suspected"}]
    assert d["confidence"] == "medium"
    assert {"outcome": "application", "sub_domain": "segfault", "symptom": "PROCESS_SEGFAULT"} in d["alternatives"]
    # the history is the evidence: the three earlier jobs of three users, named by the rule
    ev = d["root_cause"]["evidence"][0]
    assert ev["rule"] == "FleetHistoryImplicatesNode" and ev["node"] == "node-07"
    assert "3 failure(s) (0 blamed on it, 3 ambiguous) in 3 episode(s), 3 job(s) of 3 user(s)" in ev["datum"]
    assert "node-07: quarantine;" in ev["datum"] and "PROCESS_SEGFAULT" in ev["datum"]
    # the segfault itself stays in the verdict
    assert {"node": "node-07", "symptoms": ["PROCESS_SEGFAULT"]} in d["affected_nodes"]


def test_the_same_log_on_a_clean_node_stays_application(fleet_run):
    _, _, v = fleet_run
    e = v["e1"]
    assert (e["outcome"], e["root_cause"]["symptom"], e["bad_nodes"]) == ("application", "PROCESS_SEGFAULT", [])
    assert "NODE_REPEATED_FAILURES" not in json.dumps(e)


def test_after_k_clean_attempts_the_node_is_cleared(fleet_run):
    folder, db, v = fleet_run
    assert all(v[k]["outcome"] == "success" for k in ("k1", "k2", "k3"))
    f = v["f1"]
    assert (f["outcome"], f["root_cause"]["symptom"], f["bad_nodes"]) == ("application", "PROCESS_SEGFAULT", [])
    st = read_fleet_state(db, as_of=(T0 + timedelta(days=7, hours=6)).timestamp())
    n7 = st.nodes["node-07"]
    assert n7.state == "cleared" and n7.clean_since == 3
    assert "3 clean attempts since its last incident (2026-06-07T01:00:00Z)" in n7.reasons[0]


def test_without_a_store_the_verdict_is_the_jobs_own(tmp_path, bundled):
    folder = write_config(tmp_path, HISTORY[:4])
    v = run_store(folder, bundled, tmp_path / "r.db", fleet=False)
    assert v["d1"]["outcome"] == "application" and v["d1"]["bad_nodes"] == []


def test_the_policy_can_keep_verdicts_unchanged(tmp_path, bundled):
    """use_in_verdicts = false: NVSentinel's store-only mode for the history rule."""
    folder = write_config(tmp_path, HISTORY[:4], "[fleet]\nuse_in_verdicts = false\n")
    v = run_store(folder, bundled, tmp_path / "r.db")
    assert v["d1"]["outcome"] == "application"
    st = read_fleet_state(tmp_path / "r.db", load_config(folder).fleet, (T0 + timedelta(days=6, hours=2)).timestamp())
    assert st.nodes["node-07"].state == "quarantine"  # the states are still kept


def test_rulekit_fleet_text_and_json(fleet_run):
    from rulekit.cli.app import app

    _, db, _ = fleet_run
    runner = CliRunner()
    # as of the day d1 failed: four ambiguous episodes of four users -> quarantine proposed
    as_of = _iso(T0 + timedelta(days=6, hours=3))
    r = runner.invoke(app, ["fleet", "--db", str(db), "--as-of", as_of, "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    nodes = {n["node"]: n for n in doc["nodes"]}
    assert nodes["node-07"]["state"] == "quarantine"
    assert nodes["node-07"]["users"] == ["alice", "bob", "carol", "dave"]
    assert nodes["node-07"]["mean_gap_s"] == 2 * 86400
    assert nodes["node-03"]["state"] == "healthy" and nodes["node-03"]["clean_attempts"] == 4
    assert doc["mode"] == "shadow" and doc["applied"] == []
    assert doc["proposals"][0]["node"] == "node-07"
    assert doc["proposals"][0]["command"].startswith("scontrol update nodename=node-07 state=drain 'reason=rulekit: drain: 4 failure episodes")
    r = runner.invoke(app, ["fleet", "--db", str(db), "--as-of", as_of])
    assert r.exit_code == 0
    assert "QUARANTINE node-07" in r.output and "Proposed drains (shadow mode" in r.output
    # now: cleared
    r = runner.invoke(app, ["fleet", "--db", str(db), "--as-of", _iso(T0 + timedelta(days=7, hours=6))])
    assert "CLEARED    node-07" in r.output and "No drain proposed." in r.output


def test_rulekit_fleet_bad_input(tmp_path):
    from rulekit.cli.app import app

    runner = CliRunner()
    r = runner.invoke(app, ["fleet", "--db", str(tmp_path / "none.db")])
    assert r.exit_code == 2 and "no such database" in r.output
    (tmp_path / "bp.toml").write_text('[fleet]\nwindow = "soon"\nquarantine_after = 0\nbogus = 1\n')
    r = runner.invoke(app, ["fleet", "--db", str(tmp_path / "none.db"), "--configs", str(tmp_path / "bp.toml")])
    assert r.exit_code == 2
    assert "bp.toml:2:1" in r.output and "not a duration" in r.output
    assert "bp.toml:3:1" in r.output and "quarantine_after" in r.output
    assert "bp.toml:4:1" in r.output and "unknown key `bogus`" in r.output


def test_config_fleet_section_is_located(tmp_path):
    (tmp_path / "bp.toml").write_text('[[context]]\ntype = "static"\n[[context.job]]\nid = "x"\n'
                                      '[fleet]\nwindow = "7d"\nmin_users = 3\nambiguous = ["PROCESS_SEGFAULT"]\n'
                                      '[fleet.classes]\necc = ["XID-48-"]\n')
    pol = load_config(tmp_path).fleet
    assert (pol.window, pol.min_users, pol.ambiguous) == (7 * 86400, 3, ("PROCESS_SEGFAULT",))
    assert pol.fault_class("XID-48-GPU_ECC_DBE") == "ecc" and pol.clear_after_clean == 3  # the rest: defaults
    (tmp_path / "bp.toml").write_text('[[context]]\ntype = "static"\n[[context.job]]\nid = "x"\n'
                                      '[fleet]\nbreaker_share = 2\n')
    with pytest.raises(RulekitError) as e:
        load_config(tmp_path)
    assert "bp.toml:6:1" in str(e.value) and "breaker_share" in str(e.value)


# ---- the policy on synthetic rows ---------------------------------------------------------

DAY = 86400.0
BASE = T0.timestamp()


def row(node, job, day, user=None, bad=None, affected=None, outcome="application", action=None, hours=1.0,
        complete=True):
    roles = {}
    if bad:
        roles["bad"] = {"symptoms": bad[1], "blame": "node", "action": action, "confidence": bad[0]}
    if affected:
        roles["affected"] = {"symptoms": affected, "blame": None, "action": None, "confidence": None}
    if not roles:
        roles["allocated"] = {"symptoms": [], "blame": None, "action": None, "confidence": None}
    end = BASE + day * DAY
    return NodeAttempt(node, f"{job}#0", job, user, end - hours * 3600, end, outcome, complete, roles)


POL = FleetPolicy.defaults()


def test_one_users_repeats_are_the_workloads():
    rows = [row("n1", f"j{i}", i, "alice", affected=["PROCESS_SEGFAULT"]) for i in range(4)]
    h = node_history("n1", rows, POL, BASE + 10 * DAY)
    assert h.state == "healthy" and len(h.episodes) == 4
    assert "below the thresholds: 0 episode(s) blamed on it, 4 ambiguous across 1 user(s)" in h.reasons[0]
    rows[1] = row("n1", "j1", 1, "bob", affected=["PROCESS_SEGFAULT"])
    assert node_history("n1", rows, POL, BASE + 5 * DAY).state == "quarantine"  # 4 episodes, 2 users


def test_incidents_within_the_episode_gap_are_one_episode():
    rows = [row("n1", "j1", 1, "alice", affected=["cudaErrorLaunchFailure"]),
            row("n1", "j2", 1 + 10 / 1440, "bob", affected=["PROCESS_SEGFAULT"])]  # 10 minutes later
    h = node_history("n1", rows, POL, BASE + 2 * DAY)
    assert len(h.episodes) == 1 and h.state == "healthy"  # one episode < suspect_after = 2
    rows.append(row("n1", "j3", 3, "carol", affected=["PROCESS_SEGFAULT"]))
    assert node_history("n1", rows, POL, BASE + 4 * DAY).state == "suspect"


def test_a_blamed_failure_makes_a_suspect_and_a_clean_week_clears_it():
    rows = [row("n1", "j1", 1, bad=("certain", ["XID-79-FALLEN_OFF_THE_BUS"]), outcome="hardware", action="reboot")]
    assert node_history("n1", rows, POL, BASE + 2 * DAY).state == "suspect"
    h = node_history("n1", rows, POL, BASE + 5 * DAY)  # no incident for 72 h
    assert h.state == "cleared" and "no incident for 3d since 2026-06-02T00:00:00Z" in h.reasons[0]
    # six hours of clean runtime clear it too
    rows += [row("n1", "c1", 1.5, "x", outcome="success", hours=7)]
    h = node_history("n1", rows, POL, BASE + 1.6 * DAY)
    assert h.state == "cleared" and "7h of clean runtime" in h.reasons[0]


def test_the_same_xid_after_two_resets_escalates_to_rma():
    """gpud: the same Xid still asking for a reboot after 2 reboots -> hardware inspection."""
    rows = [row("n1", f"j{i}", i, f"u{i}", bad=("certain", ["XID-48-GPU_ECC_DBE"]), outcome="hardware",
                action="reset_gpu") for i in range(3)]
    h = node_history("n1", rows[:2], POL, BASE + 1.5 * DAY)
    assert h.state == "suspect" and h.action == "inspect"
    h = node_history("n1", rows, POL, BASE + 2.5 * DAY)
    assert (h.state, h.action, h.escalated) == ("quarantine", "drain_and_rma", "gpu-memory-uncorrectable")
    assert "after 2 resets (escalates after 2)" in h.reasons[0]
    # clean attempts do not clear an escalated node
    clean = [row("n1", f"c{i}", 2.6 + i / 10, "x", outcome="success") for i in range(5)]
    assert node_history("n1", rows + clean, POL, BASE + 3.2 * DAY).state == "quarantine"
    # the ECC class, not the exact Xid: 48, 140 and the CUDA ECC error are one fault
    mixed = [row("n1", "j0", 0, bad=("certain", ["XID-48-GPU_ECC_DBE"]), outcome="hardware", action="reset_gpu"),
             row("n1", "j1", 1, bad=("certain", ["cudaErrorECCUncorrectable"]), outcome="hardware", action="reset_gpu"),
             row("n1", "j2", 2, bad=("certain", ["XID-140-UNRECOVERABLE_ECC_ESCAPE"]), outcome="hardware",
                 action="reset_gpu")]
    assert node_history("n1", mixed, POL, BASE + 2.5 * DAY).action == "drain_and_rma"


def test_incomplete_or_unknown_attempts_are_not_clean():
    rows = [row("n1", "j1", 1, bad=("certain", ["XID-79-FALLEN_OFF_THE_BUS"]), outcome="hardware", action="reboot")]
    rows += [row("n1", f"u{i}", 1.1 + i / 100, "x", outcome="unknown") for i in range(3)]
    rows += [row("n1", f"i{i}", 1.2 + i / 100, "x", outcome="success", complete=False) for i in range(3)]
    h = node_history("n1", rows, POL, BASE + 1.5 * DAY)
    assert h.state == "suspect" and h.clean_since == 0 and h.attempts == 7


def test_the_circuit_breaker_proposes_none_past_its_share():
    # 40 nodes: at most max(1, 5 % of 40) = 2 new quarantines a day
    rows = [row(f"n{i:02d}", f"ok{i}", 0.5, "x", outcome="success") for i in range(40)]
    bad = lambda n, d: [row(n, f"{n}-{k}", d + k / 10, f"u{k}", bad=("certain", ["XID-79-FALLEN_OFF_THE_BUS"]),  # noqa: E731
                            outcome="hardware", action="reboot") for k in range(3)]
    st = fleet_state(rows + bad("n01", 1) + bad("n02", 1), POL, BASE + 1.5 * DAY)
    assert not st.tripped and [p["node"] for p in st.proposals] == ["n01", "n02"] and st.cap == 2
    st = fleet_state(rows + bad("n01", 1) + bad("n02", 1) + bad("n03", 1), POL, BASE + 1.5 * DAY)
    assert st.tripped and st.proposals == []
    assert "circuit breaker tripped: 3 nodes newly meet the quarantine policy within 1d, more than 2" in \
        st.breaker()["message"]
    # the window slides: a day later the same three are no longer new, and are proposed
    st = fleet_state(rows + bad("n01", 1) + bad("n02", 1) + bad("n03", 1), POL, BASE + 2.4 * DAY)
    assert not st.tripped and len(st.proposals) == 3


def test_a_rerun_replaces_and_reads_no_future(fleet_run, bundled, tmp_path):
    """The history of an attempt is what ended before it, without its own job: rerunning the
    whole window gives the same verdicts."""
    folder, db, v = fleet_run
    again = run_store(folder, bundled, db)
    assert {k: (x["outcome"], x["bad_nodes"]) for k, x in again.items()} == \
        {k: (x["outcome"], x["bad_nodes"]) for k, x in v.items()}
    con = open_ro(db)
    assert con.execute("SELECT count(*) FROM results").fetchone()[0] == len(HISTORY)
    assert {r[0] for r in con.execute("SELECT user FROM results")} >= {"alice", "bob", "carol", "dave"}
    d1_end = (T0 + timedelta(days=6, hours=1)).timestamp()
    rows = node_attempts(con, d1_end - 14 * DAY, d1_end, ["node-07"], "d1")
    assert [r.job_id for r in rows] == ["a1", "b1", "c1"]
    con.close()


def test_an_unreadable_store_is_a_note_not_a_failure(tmp_path, bundled):
    folder = write_config(tmp_path, HISTORY[:1])
    (tmp_path / "broken.db").write_bytes(b"not a database at all" * 100)
    cfg = load_config(folder)
    from rulekit.blueprint.connectors.stdout import StdoutOutput  # noqa: F401  (an output is not needed)

    rep = run(cfg, Attributor(engine=bundled), [], fleet=FleetMemory(tmp_path / "broken.db", cfg.fleet))
    v = rep.results[0]["verdict"]
    assert v["outcome"] == "application"
    assert [n["code"] for n in v["notes"]] == ["fleet-unavailable"]
    assert "judged on this attempt's evidence alone" in v["notes"][0]["message"]


def test_migration_to_v3_backfills_user_and_seconds(tmp_path, bundled):
    from rulekit.blueprint.store import open_db

    folder = write_config(tmp_path, HISTORY[:2])
    db = tmp_path / "old.db"
    con = open_db(db, upto=2)
    cfg = load_config(folder)
    rep = run(cfg, Attributor(engine=bundled), [])
    for r in rep.results:
        con.execute("BEGIN")
        con.execute("INSERT INTO results(key, job_id, attempt, outcome, evidence_complete, attributed_at, result_json,"
                    " end_ts) VALUES (?,?,?,?,1,?,?,?)", (r["key"], r["job_id"], r["attempt"], r["verdict"]["outcome"],
                                                         "x", json.dumps(r), 1.0))
        con.execute("COMMIT")
    con.close()
    con = open_db(db)
    got = dict(con.execute("SELECT job_id, user FROM results").fetchall())
    assert got == {"a1": "alice", "b1": "bob"}
    assert all(s is not None for (s,) in con.execute("SELECT attribution_seconds FROM results"))
    con.close()
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == VERSION


def test_an_escalated_node_is_not_cleared_by_quiet_time():
    rows = [row("n1", f"j{i}", i, f"u{i}", bad=("certain", ["XID-48-GPU_ECC_DBE"]), outcome="hardware",
                action="reset_gpu") for i in range(3)]
    assert node_history("n1", rows, POL, BASE + 9 * DAY).state == "quarantine"


def test_apply_drains_at_most_max_new_and_refuses_odd_names(tmp_path):
    """Fake `sinfo`/`scontrol` scripts stand for Slurm here (the real one: test_blueprint_slurm)."""
    from rulekit.blueprint import drains

    log = tmp_path / "scontrol.log"
    sinfo = tmp_path / "sinfo"
    sinfo.write_text("#!/bin/sh\n"  # n3 is drained by someone else, n4 unknown to Slurm, the rest idle
                     'case "$4" in n3) echo "n3|drained|admin: bad PSU";; n4) ;; *) echo "$4|idle|none";; esac\n')
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    for f in (sinfo, scontrol):
        f.chmod(0o755)
    props = [{"node": n, "action": "drain", "reason": "3 failure episodes"} for n in
             ("n1", "n2", "n3", "n4", "n[1-9]", "a b", "x,y")]
    out = {o.node: o for o in drains.apply(props, str(scontrol), str(sinfo), max_new=1)}
    assert out["n1"].status == "drained"
    assert out["n2"].status == "deferred" and "at most 1 new drain" in out["n2"].detail
    assert out["n3"].status == "left-alone" and "admin: bad PSU" in out["n3"].detail
    assert out["n4"].status == "failed" and "does not know node 'n4'" in out["n4"].detail
    assert {out[n].status for n in ("n[1-9]", "a b", "x,y")} == {"refused"}
    assert log.read_text().splitlines() == ["update nodename=n1 state=drain reason=rulekit: drain: 3 failure episodes"]
    # shadow mode: the commands only
    cmds = drains.proposed(props)
    assert cmds[0]["command"] == "scontrol update nodename=n1 state=drain 'reason=rulekit: drain: 3 failure episodes'"
    assert cmds[4]["command"] is None and cmds[4]["refused"] == "not a plain host name"
    assert drains.reason_text("bad\nline\x00 " + "x" * 500).startswith("rulekit: bad line x")
    assert len(drains.reason_text("x" * 500)) == drains.MAX_REASON


def test_service_mode_and_executor_carry_the_fleet_context(fleet_run, tmp_path):
    """The same history through a running `rulekit serve` (the context in the request body) and
    through `blueprint run -j 2` (the context built here, sent with each task): d1 is named."""
    import httpx

    from test_service import _start, _stop
    from rulekit.cli.app import app

    folder, db, v = fleet_run
    copy = tmp_path / "copy.db"
    src = sqlite3.connect(db)
    dst = sqlite3.connect(copy)
    src.backup(dst)
    src.close()
    dst.close()
    r = CliRunner().invoke(app, ["blueprint", "run", "--configs", str(folder), "--output", f"sqlite:{copy}", "-j", "2",
                                 "-q"])
    assert r.exit_code == 0, r.output
    con = open_ro(copy)
    d1 = json.loads(con.execute("SELECT result_json FROM results WHERE job_id = 'd1'").fetchone()[0])["verdict"]
    con.close()
    assert d1["bad_nodes"] == v["d1"]["bad_nodes"] and d1["root_cause"]["symptom"] == "NODE_REPEATED_FAILURES"

    proc, url, _ = _start([])
    try:
        cfg = load_config(folder)
        from rulekit.blueprint.model import Window

        attempts = {a.job_id: a for a in cfg.contexts[0].attempts(Window())}
        ctx, note = FleetMemory(db, cfg.fleet).context_for(attempts["d1"])
        assert note is None and ctx.record("node-07").state == "quarantine"
        from rulekit.blueprint.orchestrator import attribute_attempt

        res = attribute_attempt(cfg, Attributor(service_url=url), attempts["d1"], fleet=ctx)
        assert res["verdict"]["bad_nodes"] == v["d1"]["bad_nodes"]
        assert res["verdict"]["root_cause"]["evidence"][0]["datum"] == v["d1"]["root_cause"]["evidence"][0]["datum"]
        # a malformed context is a 422 naming the field, never a 500
        body = {"job": {"id": "x", "state": "FAILED", "nodes": ["n1"]}, "observations": [],
                "fleet": {"nodes": {"n1": {"state": "doomed"}}}}
        bad = httpx.post(f"{url}/v1/attribute", json=body, timeout=30)
        assert bad.status_code == 422
        item = bad.json()["detail"][0]
        assert item["loc"] == ["body", "fleet"] and "fleet.nodes.n1.state: must be one of" in item["msg"]
    finally:
        _stop(proc)
