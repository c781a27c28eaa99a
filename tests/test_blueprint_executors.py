"""`rulekit blueprint run` on executors: each attempt one task, collected and attributed on a
worker of a real Dask `LocalCluster` (two worker processes, started once for the module) or
the local process pool, and written by the client into SQLite.

The sample Blueprint stores exactly what the in-process path stores; a worker SIGKILLed
with attempts in flight has them re-run, and every attempt is written (and stored) once;
an attempt past its time limit is reported (exit 1) while the others are stored; with
`--service` the workers post to a real Service and get what this process gets."""
from __future__ import annotations

import collections
import json
import os
import signal
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from corpora import STALL_RULES, write_rules
from dask_cluster import two_worker_client

from rulekit.blueprint.config import load_config
from rulekit.blueprint.connectors.sqlite import SqliteOutput
from rulekit.blueprint.tasks import AttemptTask, config_for, run_tasks
from rulekit.cli import app
from rulekit.executors import CorpusSpec

distributed = pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parent.parent
STATIC = REPO / "examples" / "blueprint" / "static"
TABLES = ("results", "result_nodes", "evidence", "coverage", "components")



@pytest.fixture(scope="module")
def client():
    with two_worker_client() as c:
        yield c


def stall_blueprint(root: Path, lines: dict[str, str]) -> Path:
    """A Blueprint config folder: the stall rules, a static context of `lines`' jobs (one node
    each) and their syslog, read by the local-files connector."""
    rules = root / "rules"
    rules.mkdir(parents=True)
    write_rules(rules, STALL_RULES)
    cfg = root / "bp"
    cfg.mkdir()
    jobs = "".join(f'[[context.job]]\nid = "{j}"\nstate = "FAILED"\nnodes = ["n-{j}"]\n'
                   f'start = 2026-06-01T03:00:00Z\nend = 2026-06-01T03:10:00Z\n' for j in lines)
    (cfg / "blueprint.toml").write_text(
        f'[blueprint]\nrules = ["{rules}"]\n[[context]]\ntype = "static"\nname = "stall-jobs"\n{jobs}'
        f'[[logs]]\ntype = "local"\nname = "files"\nroot = "{root}/evidence/{{job_id}}"\n'
        '[[logs.files]]\nsource = "syslog"\nglob = "syslog/{node}.log"\n')
    for j, line in lines.items():
        d = root / "evidence" / j / "syslog"
        d.mkdir(parents=True)
        (d / f"n-{j}.log").write_text(f"Jun  1 03:05:00 n-{j} kernel: {line}\n")
    return cfg


def stored(db: Path) -> dict[str, list]:
    """Every table's rows, with the times that differ from run to run taken out."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    out = {}
    for t in TABLES:
        rows = []
        for row in con.execute(f"SELECT * FROM {t}"):
            row = dict(row)
            if t == "results":
                r = json.loads(row.pop("result_json"))
                r.pop("attributed_at")
                for c in r["coverage"]["collectors"]:
                    c.pop("seconds")
                for clock in ("attributed_at", "attribution_seconds"):  # this run's clock
                    row.pop(clock)
                row["result"] = r
            rows.append(row)
        out[t] = sorted(rows, key=repr)
    con.close()
    return out


def test_the_sample_blueprint_on_a_local_cluster_stores_what_the_in_process_path_stores(client, tmp_path):
    runner = CliRunner()
    here, there = tmp_path / "here.db", tmp_path / "dask.db"
    r1 = runner.invoke(app, ["blueprint", "run", "--configs", str(STATIC), "--output", f"sqlite:{here}", "-q"])
    assert r1.exit_code == 0, r1.output
    sched = client.scheduler.address
    r2 = runner.invoke(app, ["blueprint", "run", "--configs", str(STATIC), "--output", f"sqlite:{there}",
                             "--executor", "dask", "--scheduler", sched])
    assert r2.exit_code == 0, r2.output
    assert "train-0142#0: HARDWARE/nvlink bad=node-02" in r2.output
    a, b = stored(here), stored(there)
    assert len(a["results"]) == 4 and a["evidence"]
    assert a == b


def test_attempt_tasks_run_on_both_workers_and_match_in_process(client, tmp_path):
    from rulekit.executors.dask import DaskExecutor

    cfg_dir = stall_blueprint(tmp_path, {f"s{i}": "FAULT" for i in range(6)})
    cfg = load_config(cfg_dir)
    spec = CorpusSpec.of(cfg.rules)
    with DaskExecutor(spec, client=client) as ex:
        rep = run_tasks(cfg, cfg_dir, ex.map, [])
    assert not rep.failed and not rep.context_failures
    assert len({r["key"] for r in rep.results}) == 6
    assert {r["verdict"]["root_cause"]["symptom"] for r in rep.results} == {"STALL_FAULT"}
    assert {r["context"]["collector"] for r in rep.results} == {"stall-jobs"}


class CountingOutput:
    """Counts writes per attempt key, then writes to SQLite."""

    def __init__(self, db: Path) -> None:
        self.store, self.writes = SqliteOutput(str(db)), collections.Counter()

    def write(self, result: dict) -> None:
        self.writes[result["key"]] += 1
        self.store.write(result)

    def close(self) -> None:
        self.store.close()


def test_a_worker_killed_mid_run_has_its_attempts_rerun_and_each_is_stored_once(client, tmp_path):
    from rulekit.executors.dask import DaskExecutor

    names = [f"k{i:02d}" for i in range(12)]
    cfg_dir = stall_blueprint(tmp_path, {j: "FAULT SLEEP" for j in names})
    cfg = load_config(cfg_dir)
    out = CountingOutput(tmp_path / "bp.db")
    victim = []

    def on_result(result: dict) -> None:
        if not victim:  # after the first result: kill the busiest worker, tasks in flight
            processing = client.processing()
            w = max(processing, key=lambda k: len(processing[k]))
            assert processing[w], processing
            victim.append(w)
            os.kill(client.run(os.getpid, workers=[w])[w], signal.SIGKILL)

    with DaskExecutor(CorpusSpec.of(cfg.rules), client=client, max_in_flight=6) as ex:
        rep = run_tasks(cfg, cfg_dir, ex.map, [out], on_result=on_result)
    out.close()
    assert victim and not rep.failed, rep.failed
    keys = [f"{j}#0" for j in names]
    assert out.writes == collections.Counter(keys)  # every attempt written exactly once
    con = sqlite3.connect(tmp_path / "bp.db")
    assert sorted(k for (k,) in con.execute("SELECT key FROM results")) == keys
    assert con.execute("SELECT count(*) FROM coverage").fetchone()[0] == 3 * 12  # context, logs, attribution
    assert {r["verdict"]["root_cause"]["symptom"] for r in rep.results} == {"STALL_FAULT"}
    assert victim[0] not in client.nthreads()  # that worker died; the others ran its attempts


def test_an_attempt_past_its_time_limit_fails_and_the_others_are_stored(tmp_path):
    cfg_dir = stall_blueprint(tmp_path, {"ok1": "FAULT", "hang": "FAULT HANG", "ok2": "FAULT"})
    db = tmp_path / "bp.db"
    r = CliRunner().invoke(app, ["blueprint", "run", "--configs", str(cfg_dir), "--output", f"sqlite:{db}",
                                 "-j", "2", "--timeout", "1"])
    assert r.exit_code == 1, r.output
    assert "error: hang#0: timed out after 1 s" in r.output
    assert sorted(k for (k,) in sqlite3.connect(db).execute("SELECT key FROM results")) == ["ok1#0", "ok2#0"]


def test_a_worker_that_reads_other_config_files_is_a_clear_error(tmp_path):
    cfg_dir = stall_blueprint(tmp_path, {"a": "FAULT"})
    with pytest.raises(Exception, match="differs from the client's"):
        config_for(str(cfg_dir), "0000000000000000")
    task = AttemptTask(str(cfg_dir), "0" * 16, "a#0", "stall-jobs", None)  # type: ignore[arg-type]
    assert task == AttemptTask(str(cfg_dir), "0" * 16, "a#0", "stall-jobs", None, ("a note",))
    assert task.key() != AttemptTask(str(cfg_dir), "1" * 16, "a#0", "stall-jobs", None).key()


def _strip(r: dict) -> dict:
    r = json.loads(json.dumps(r))
    r.pop("attributed_at")
    for c in r["coverage"]["collectors"]:
        c.pop("seconds")
    return r


def test_with_a_service_the_workers_post_to_it_and_get_what_this_process_gets(client, tmp_path):
    """`blueprint run --service URL --executor dask`: each worker collects the attempt's evidence
    and posts it to the running Service; the results equal the in-process service path's."""
    import socket
    import threading
    import time

    import uvicorn

    from rulekit.blueprint.orchestrator import Attributor, run
    from rulekit.executors.base import engine_for
    from rulekit.executors.dask import DaskExecutor
    from rulekit.service.app import create_app
    from rulekit.service.settings import ServiceSettings

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    app_ = create_app(engine_for(CorpusSpec.of(None)), ServiceSettings(state_dir=str(tmp_path / "jobs")))
    server = uvicorn.Server(uvicorn.Config(app_, log_level="warning"))
    t = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        for _ in range(400):
            if server.started:
                break
            time.sleep(0.05)
        cfg = load_config(STATIC)
        here = run(cfg, Attributor(service_url=url), [])
        with DaskExecutor(CorpusSpec.of(None), client=client) as ex:
            there = run_tasks(cfg, STATIC, ex.map, [], service_url=url)
    finally:
        server.should_exit = True
        t.join(30)
        sock.close()
    assert not there.failed and len(there.results) == 4
    assert all(r["engine"] == {"mode": "service", "url": url} for r in there.results)
    assert {r["key"]: _strip(r) for r in there.results} == {r["key"]: _strip(r) for r in here.results}
