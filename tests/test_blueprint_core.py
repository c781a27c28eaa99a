"""The Blueprint's core path with data: config validation (located errors), the
static context, local logs (node and rank globs, rotated .gz), the embedded
engine, the Service path against a real `rulekit serve`, SQLite (migrations,
idempotent upsert) and a failing connector recorded in the coverage."""
from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rulekit.blueprint.config import load_config
from rulekit.blueprint.model import Attempt, ConnectorError, Window, parse_time, render
from rulekit.blueprint.orchestrator import Attributor, run
from rulekit.blueprint.store import VERSION, fleet, list_jobs, open_db, open_ro, upsert
from rulekit.diagnostics import RulekitError

REPO = Path(__file__).resolve().parent.parent
STATIC = REPO / "examples" / "blueprint" / "static"


class Collect:
    def __init__(self):
        self.results = []

    def write(self, r):
        self.results.append(r)

    def close(self):
        pass


def _run(cfg_dir, engine, **kw):
    out = Collect()
    rep = run(load_config(cfg_dir), Attributor(engine=engine), [out], **kw)
    return rep, {r["job_id"]: r for r in out.results}


def test_quickstart_reproduces_the_walk_through(bundled):
    rep, res = _run(STATIC, bundled)
    assert not rep.context_failures
    v = res["train-0142"]["verdict"]
    assert (v["outcome"], v["sub_domain"]) == ("hardware", "nvlink")
    assert [b["node"] for b in v["bad_nodes"]] == ["node-02"]
    assert v["root_cause"]["symptom"] == "XID-149-NVLINK_SIGNAL_INTEGRITY"
    # the NCCL errors on the other ranks stay as supporting evidence
    interesting = {n["node"]: n["symptoms"] for n in v["interesting_nodes"]}
    assert "NCCL_IB_RETRY_EXCEEDED" in interesting["node-03"]
    # evidence points at the file and line it came from, rotated file read too
    xid = [e for e in v["evidence"] if e["symptom"] == "XID-149-NVLINK_SIGNAL_INTEGRITY"][0]
    assert xid["source"] == "syslog/node-02.log" and xid["line_num"] == 3
    cov = res["train-0142"]["coverage"]
    local = {c["collector"]: c for c in cov["collectors"]}["local-files"]
    assert cov["complete"] and local["status"] == "ok" and local["observations"] == 6
    assert [c["kind"] for c in cov["collectors"]] == ["context", "logs", "attribution"]
    assert res["train-0151"]["verdict"]["outcome"] == "timeout"
    assert res["train-0150"]["verdict"]["bad_nodes"][0]["node"] == "node0004"
    assert v["evidence_complete"] is True


def _write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_rank_globs_rotated_gz_and_order(tmp_path, bundled):
    ev = tmp_path / "ev" / "j1"
    # rank files: rank 9 lives on n2 with 8 tasks per node
    _write(ev / "ranks" / "rank-9.log", "boom\n")
    _write(ev / "ranks" / "rank-0.log", "fine\n")
    (ev / "sys").mkdir(parents=True)
    with gzip.open(ev / "sys" / "n2.log.2.gz", "wt") as g:
        g.write("oldest\n")
    with gzip.open(ev / "sys" / "n2.log.1.gz", "wt") as g:
        g.write("older\n")
    _write(ev / "sys" / "n2.log", "live\n")
    (ev / "sys" / "n1.log.1.gz").write_bytes(b"not gzip at all")
    _write(tmp_path / "cfg" / "bp.toml", f"""
[[context]]
type = "static"
[[context.job]]
id = "j1"
state = "FAILED"
nodes = ["n1", "n2"]
tasks_per_node = 8
[[logs]]
type = "local"
root = "{tmp_path / 'ev' / '{job_id}'}"
[[logs.files]]
source = "syslog"
glob = "sys/{{node}}.log*"
[[logs.files]]
source = "applog"
glob = "ranks/rank-{{rank}}.log"
""")
    cfg = load_config(tmp_path / "cfg")
    a = next(iter(cfg.contexts[0].attempts(Window())))
    obs = cfg.logs[0].collect(a)
    assert [(o.label, o.node) for o in obs] == [
        ("sys/n2.log.2.gz", "n2"), ("sys/n2.log.1.gz", "n2"), ("sys/n2.log", "n2"),
        ("ranks/rank-0.log", "n1"), ("ranks/rank-9.log", "n2")]
    assert b"".join(obs[0].chunks()) == b"oldest\n"
    notes = cfg.logs[0].take_notes()
    assert notes and "n1.log.1.gz" in notes[0] and "gzip" in notes[0]


def test_config_errors_are_located(tmp_path):
    cfg = _write(tmp_path / "c" / "a.toml", """
[[context]]
type = "static"
jobs = "missing.toml"

[[logs]]
type = "lokki"

[[logs]]
type = "local"
rooot = "x"
[[logs.files]]
source = 3
glob = "a/*.log"
""")
    with pytest.raises(RulekitError) as ei:
        load_config(cfg.parent)
    got = {(d.code, d.span.line): d.message for d in ei.value.diagnostics}
    assert ("RK603", 4) in got and "missing.toml" in got[("RK603", 4)]
    assert ("RK602", 7) in got and "lokki" in got[("RK602", 7)]
    assert ("RK602", 11) in got and "rooot" in got[("RK602", 11)]
    assert ("RK602", 13) in got and "`source`" in got[("RK602", 13)]
    assert all(d.span.file == str(cfg) for d in ei.value.diagnostics)


def test_config_syntax_error_has_line_and_column(tmp_path):
    _write(tmp_path / "c" / "a.toml", '[[context]]\ntype = "static\n')
    with pytest.raises(RulekitError) as ei:
        load_config(tmp_path / "c")
    d = ei.value.diagnostics[0]
    assert d.code == "RK601" and d.span.line == 2 and d.span.col > 1


def test_cli_reports_config_error_with_location(tmp_path):
    _write(tmp_path / "c" / "a.toml", '[[context]]\ntype = "static"\n[[context.job]]\nid = "x"\nstate = "EXPLODED"\n')
    p = subprocess.run([sys.executable, "-m", "rulekit", "blueprint", "run", "--configs", str(tmp_path / "c")],
                       capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert f"{tmp_path / 'c' / 'a.toml'}:5:1: error RK602" in p.stderr and "EXPLODED" in p.stderr
    assert "Traceback" not in p.stderr


class Broken:
    """A user connector (`type = "module:Class"`) that always fails."""

    TYPE = "broken"
    KEYS = {"type", "name", "why"}

    def __init__(self, why):
        self.why = why

    @classmethod
    def from_config(cls, sec):
        return cls(sec.get("why", str, "down"))

    def collect(self, attempt):
        raise ConnectorError(self.why)


class Buggy(Broken):
    def collect(self, attempt):
        return 1 / 0


def test_a_failing_connector_is_recorded_and_attribution_goes_on(tmp_path, bundled):
    cfg = tmp_path / "cfg"
    shutil.copytree(STATIC, cfg)
    (cfg / "extra.toml").write_text(
        '[[logs]]\ntype = "tests.test_blueprint_core:Broken"\nname = "loki-eu"\nwhy = "connection refused"\n'
        '[[metrics]]\ntype = "tests.test_blueprint_core:Buggy"\nname = "prom"\n')
    sys.path.insert(0, str(REPO))
    rep, res = _run(cfg, bundled, job_id="train-0142")
    r = res["train-0142"]
    assert list(res) == ["train-0142"]
    cov = {c["collector"]: c for c in r["coverage"]["collectors"]}
    assert cov["loki-eu"]["status"] == "failed" and cov["loki-eu"]["error"] == "connection refused"
    assert cov["prom"]["status"] == "failed" and "ZeroDivisionError" in cov["prom"]["error"]
    assert cov["local-files"]["status"] == "ok"
    assert r["coverage"]["complete"] is False
    v = r["verdict"]
    assert v["outcome"] == "hardware" and v["evidence_complete"] is False
    assert any("loki-eu" in n["message"] for n in v["notes"] if isinstance(n, dict))


def test_sqlite_upsert_is_idempotent_and_wal(tmp_path, bundled):
    db = tmp_path / "r.db"
    from rulekit.blueprint.connectors.sqlite import SqliteOutput

    for _ in range(2):
        out = SqliteOutput(db)
        run(load_config(STATIC), Attributor(engine=bundled), [out])
        out.close()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("SELECT count(*) FROM results").fetchone()[0] == 4
    assert con.execute("SELECT count(*) FROM result_nodes WHERE key='train-0142#0' AND role='bad'").fetchone()[0] == 1
    ro = open_ro(db)
    assert [r["job_id"] for r in list_jobs(ro, outcome="hardware")] == ["train-0155", "train-0142"]
    top = fleet(ro, "node")[0]
    assert (top["name"], top["jobs"]) == ("node-02", 2)


def test_migration_from_v1_backfills_components(tmp_path, bundled):
    db = tmp_path / "old.db"
    con = open_db(db, upto=1)
    _, res = _run(STATIC, bundled)
    for r in res.values():
        con.execute("BEGIN")
        v = r["verdict"]
        con.execute("INSERT INTO results(key, job_id, attempt, outcome, evidence_complete, attributed_at, result_json)"
                    " VALUES (?,?,?,?,1,?,?)", (r["key"], r["job_id"], r["attempt"], v["outcome"], "x", json.dumps(r)))
        con.execute("COMMIT")
    con.close()
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == 1
    con = open_db(db)  # migrates to the latest version
    assert con.execute("PRAGMA user_version").fetchone()[0] == VERSION == 5
    names = {r[0] for r in con.execute("SELECT name FROM components WHERE kind='node'")}
    assert names == {"node-02", "node0004"}


def test_newer_schema_is_refused(tmp_path):
    db = tmp_path / "new.db"
    sqlite3.connect(db).execute("PRAGMA user_version = 99")
    from rulekit.blueprint.store import StoreError

    with pytest.raises(StoreError, match="version 99"):
        open_db(db)


def test_service_mode_posts_to_a_running_serve(tmp_path, bundled):
    import socket
    import time

    import uvicorn

    from rulekit.service.app import create_app
    from rulekit.service.settings import ServiceSettings

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(bundled, ServiceSettings(state_dir=str(tmp_path / "jobs"))),
                                           log_level="warning"))
    t = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        for _ in range(200):
            if server.started:
                break
            time.sleep(0.05)
        out = Collect()
        run(load_config(STATIC), Attributor(service_url=url), [out], job_id="train-0142")
        r = out.results[0]
        assert r["engine"] == {"mode": "service", "url": url}
        assert r["verdict"]["outcome"] == "hardware" and r["verdict"]["bad_nodes"][0]["node"] == "node-02"
    finally:
        server.should_exit = True
        t.join(30)
        sock.close()
    # the Service gone: the attempt is still written, with the failure in its coverage
    out = Collect()
    run(load_config(STATIC), Attributor(service_url=url, timeout=5), [out], job_id="train-0142")
    r = out.results[0]
    eng = [c for c in r["coverage"]["collectors"] if c["kind"] == "attribution"][0]
    assert r["verdict"] is None and eng["status"] == "failed" and "unreachable" in eng["error"]


def test_window_and_templates():
    a = Attempt("j", 2, ("n1",), parse_time("2026-06-01T00:00:00Z"), parse_time("2026-06-01T01:00:00Z"))
    assert render('up{instance=~"{node}:.*", job="{job_id}"} # {attempt}', a, "n1") == \
        'up{instance=~"n1:.*", job="j"} # 2'
    assert Window(parse_time("2026-06-01T00:30:00Z"), None).contains(a)
    assert not Window(None, parse_time("2026-06-01T00:30:00Z")).contains(a)
    with pytest.raises(ValueError):
        parse_time("yesterday-ish")


def test_cli_end_to_end_into_sqlite(tmp_path):
    db = tmp_path / "bp.db"
    p = subprocess.run([sys.executable, "-m", "rulekit", "blueprint", "run", "--configs", str(STATIC),
                        "--output", f"sqlite:{db}", "--output", "stdout", "--since", "2026-06-02T00:00:00Z"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    assert sorted(r["job_id"] for r in lines) == ["train-0150", "train-0151", "train-0155"]
    assert "train-0155#0: HARDWARE/nvlink bad=node-02" in p.stderr
    assert sqlite3.connect(db).execute("SELECT count(*) FROM results").fetchone()[0] == 3


def test_rule_folders_from_the_config(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "bp.toml").write_text(
        f'[blueprint]\nrules = ["{REPO / "bundled_rules"}", "no-such-rules"]\n'
        '[[context]]\ntype = "static"\n[[context.job]]\nid = "a"\n')
    with pytest.raises(RulekitError) as ei:
        load_config(tmp_path / "c")
    d = ei.value.diagnostics[0]
    assert d.code == "RK603" and "no-such-rules" in d.message and d.span.line == 2
    (tmp_path / "c" / "bp.toml").write_text(
        f'[blueprint]\nrules = ["{REPO / "bundled_rules"}"]\n[[context]]\ntype = "static"\n[[context.job]]\nid = "a"\n')
    assert load_config(tmp_path / "c").rules == [REPO / "bundled_rules"]
