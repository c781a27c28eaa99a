"""The Slurm connector against a real one-node Slurm (slurmctld, slurmd, slurmdbd
with MariaDB, munge; Debian packages): jobs that complete, fail, time out, get
cancelled, an array and a requeued job, read back through `sacct`; a proposed drain
applied through `scontrol` (and a node drained by someone else left alone).  Plus the
pure parts: hostlist expansion and the 23.02+ JSON shape."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from slurm_cluster import SlurmCluster, unavailable  # noqa: E402

from rulekit.blueprint.connectors.hostlist import expand  # noqa: E402
from rulekit.blueprint.connectors.slurm import SlurmContext  # noqa: E402
from rulekit.blueprint.model import ConnectorError, Window  # noqa: E402


def test_hostlist_expansion():
    assert expand("gpu[01-03,07],login1") == ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]
    assert expand("r[1-2]-n[08-10]") == ["r1-n08", "r1-n09", "r1-n10", "r2-n08", "r2-n09", "r2-n10"]
    assert expand("None assigned") == [] and expand("node5") == ["node5"]
    with pytest.raises(ValueError):
        expand("gpu[01-03")
    with pytest.raises(ValueError):
        expand("gpu[5-2]")


def test_2302_shape_and_het_and_array():
    """The 23.02+ shape (state lists, {set, infinite, number}) with a het job and an array task."""
    n = lambda v: {"set": True, "infinite": False, "number": v}  # noqa: E731
    data = {"meta": {"slurm": {"version": {"major": "23", "minor": "11", "micro": "1"}}}, "jobs": [
        {"job_id": 10, "name": "het", "state": {"current": ["COMPLETED"]}, "exit_code": {"status": ["SUCCESS"],
         "return_code": n(0)}, "nodes": "a[1-2]", "time": {"start": n(100), "end": n(200), "submission": n(90)},
         "het": {"job_id": n(10), "job_offset": n(0)}, "array": {"job_id": n(0), "task_id": {"set": False}}, "steps": []},
        {"job_id": 11, "name": "het", "state": {"current": ["FAILED"]}, "exit_code": {"status": ["ERROR"],
         "return_code": n(7), "signal": {"id": n(0)}}, "nodes": "b1", "time": {"start": n(100), "end": n(210),
         "submission": n(90)}, "het": {"job_id": n(10), "job_offset": n(1)}, "array": {"job_id": n(0),
         "task_id": {"set": False}}, "steps": [{"step": {"id": "11.0", "name": "python"}, "state": ["FAILED"],
         "exit_code": {"return_code": n(7)}, "nodes": {"range": "b1"}}]},
        {"job_id": 21, "state": {"current": ["TIMEOUT"]}, "exit_code": {"return_code": n(0)}, "nodes": "c1",
         "time": {"start": n(300), "end": n(400), "submission": n(5)}, "array": {"job_id": n(20), "task_id": n(3)},
         "het": {"job_id": n(0)}, "steps": []},
        {"job_id": 30, "state": {"current": ["RUNNING"]}, "nodes": "c2", "time": {"start": n(1)}},
    ]}
    atts = {a.job_id: a for a in SlurmContext().parse(data)}
    assert set(atts) == {"10", "20_3"}
    het = atts["10"]
    assert het.state == "FAILED" and het.exit_code == "7:0" and het.nodes == ("a1", "a2", "b1")
    assert het.extra["het_components"] == ["10", "11"] and het.steps[0]["state"] == "FAILED"
    assert atts["20_3"].state == "TIMEOUT" and atts["20_3"].extra["array"] == {"job_id": 20, "task_id": 3}


def test_sacct_missing_or_broken_is_a_connector_error(tmp_path):
    with pytest.raises(ConnectorError, match="not installed"):
        SlurmContext(sacct=str(tmp_path / "nope")).attempts(Window())
    fake = tmp_path / "sacct"
    fake.write_text("#!/bin/sh\necho '{not json'\n")
    fake.chmod(0o755)
    with pytest.raises(ConnectorError, match="not JSON"):
        SlurmContext(sacct=str(fake)).attempts(Window())


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    why = unavailable()
    if why:
        print(f"SKIP real Slurm: {why}")
        pytest.skip(why)
    import shutil
    import tempfile

    # not under pytest's 0700 tmp dir: the mysql and slurm users must reach it
    work = Path(tempfile.mkdtemp(prefix="rulekit-slurm-", dir="/var/tmp"))
    c = SlurmCluster(work)
    try:
        c.start()
        # requeue a job while it runs: sacct -D then lists two runs of one job id
        req = c.sbatch("--requeue", "--wrap=sleep 5; exit 0")
        for _ in range(60):
            if subprocess.run(["squeue", "-h", "-j", req, "-o", "%T"], capture_output=True, text=True).stdout.strip() == "RUNNING":
                break
            time.sleep(0.5)
        time.sleep(1)
        subprocess.run(["scontrol", "requeue", req], capture_output=True)
        ids = {"requeue": req, "ok": c.sbatch("--wrap=echo ok"), "fail": c.sbatch("--wrap=echo boom; exit 3"),
               "timeout": c.sbatch("--time=1", "--wrap=sleep 600"), "array": c.sbatch("--array=1-2", "--wrap=echo arr"),
               "cancel": c.sbatch("--wrap=sleep 300")}
        for _ in range(60):
            if subprocess.run(["squeue", "-h", "-j", ids["cancel"], "-o", "%T"], capture_output=True, text=True).stdout.strip() == "RUNNING":
                break
            time.sleep(0.5)
        subprocess.run(["scancel", ids["cancel"]], capture_output=True)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if not subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout.strip():
                break
            time.sleep(3)
        time.sleep(2)
        yield c, ids
    finally:
        c.stop()
        shutil.rmtree(work, ignore_errors=True)


def test_real_slurm_attempts(slurm):
    c, ids = slurm
    atts = list(SlurmContext().attempts(Window()))
    by = {}
    for a in atts:
        by.setdefault(a.job_id, []).append(a)
    assert by[ids["ok"]][0].state == "COMPLETED" and by[ids["ok"]][0].exit_code == "0:0"
    failed = by[ids["fail"]][0]
    assert failed.state == "FAILED" and failed.exit_code == "3:0", failed  # from `sacct -P`, not the JSON
    assert failed.nodes == (c.host,) and failed.start and failed.end
    assert failed.steps and failed.steps[0]["name"] == "batch"
    assert by[ids["timeout"]][0].state == "TIMEOUT"
    cancelled = by[ids["cancel"]][0]
    assert cancelled.state == "CANCELLED"
    assert cancelled.execution_cancellation and cancelled.execution_cancellation["cancelled_by"] == "root"
    assert {f"{ids['array']}_1", f"{ids['array']}_2"} <= set(by)
    req = by[ids["requeue"]]
    assert len(req) == 2 and [a.attempt for a in req] == [0, 1], [(a.attempt, a.state) for a in req]
    assert req[0].state == "REQUEUED" and req[1].state == "COMPLETED"
    one = list(SlurmContext().attempts(Window(), job_id=ids["fail"]))
    assert [a.job_id for a in one] == [ids["fail"]]


def test_real_slurm_through_the_blueprint(slurm, tmp_path, bundled):
    c, ids = slurm
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "bp.toml").write_text(f'[[context]]\ntype = "slurm"\nname = "test-cluster"\n'
                                 f'[[logs]]\ntype = "local"\nroot = "{c.work}"\n[[logs.files]]\nsource = "applog"\n'
                                 f'glob = "slurm-{{job_id}}.out"\n')
    p = subprocess.run([sys.executable, "-m", "rulekit", "blueprint", "run", "--configs", str(cfg), "--job", ids["timeout"],
                        "--output", "stdout", "--output", f"sqlite:{tmp_path / 'r.db'}"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout.splitlines()[0])
    assert r["context"]["source"] == "slurm" and r["context"]["state"] == "TIMEOUT"
    assert r["verdict"]["outcome"] == "timeout" and r["verdict"]["root_cause"]["symptom"] == "SLURM_TIMEOUT"


def _xid79_result(host: str, job: str, end: float, user: str) -> dict:
    iso = lambda t: datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")  # noqa: E731
    return {"key": f"{job}#0", "job_id": job, "attempt": 0,
            "context": {"nodes": [host], "start": iso(end - 3600), "end": iso(end), "user": user, "state": "FAILED"},
            "verdict": {"outcome": "hardware", "sub_domain": "gpu", "confidence": "high",
                        "root_cause": {"symptom": "XID-79-FALLEN_OFF_THE_BUS", "node": host},
                        "bad_nodes": [{"node": host, "symptoms": ["XID-79-FALLEN_OFF_THE_BUS"], "blame": "node",
                                       "action": "reboot", "confidence": "certain"}], "evidence": []},
            "coverage": {"complete": True, "collectors": []}, "attributed_at": iso(end)}


def test_proposed_drain_applied_to_the_real_slurm(slurm, tmp_path):
    """`rulekit fleet --apply`: a node someone else drained is left alone; a node in service is
    drained with a `rulekit:` reason; applying again changes nothing; nothing is ever resumed."""
    from typer.testing import CliRunner

    from rulekit.blueprint.drains import node_state
    from rulekit.blueprint.store import open_db, upsert
    from rulekit.cli.app import app

    c, _ = slurm
    host = c.host
    db = tmp_path / "fleet.db"
    con = open_db(db)
    now = time.time()
    for i, user in enumerate(("alice", "bob", "carol")):  # the same Xid in three episodes, after two reboots
        upsert(con, _xid79_result(host, f"x{i}", now - (3 - i) * 7200, user))
    con.close()
    scontrol = lambda *a: subprocess.run(["scontrol", *a], capture_output=True, text=True, timeout=30)  # noqa: E731

    def fleet_apply() -> dict:
        r = CliRunner().invoke(app, ["fleet", "--db", str(db), "--apply", "--format", "json"])
        assert r.exit_code == 0, r.output
        return json.loads(r.output)

    try:
        assert scontrol("update", f"nodename={host}", "state=drain", "reason=admin: replacing a fan").returncode == 0
        doc = fleet_apply()
        assert doc["proposals"][0]["node"] == host and doc["proposals"][0]["action"] == "drain_and_rma"
        assert doc["applied"][0]["status"] == "left-alone"
        state, reason = node_state(host)
        assert "drain" in state and reason.startswith("admin: replacing a fan")

        assert scontrol("update", f"nodename={host}", "state=resume").returncode == 0
        state, _ = node_state(host)
        assert "drain" not in state
        doc = fleet_apply()
        assert doc["applied"][0]["status"] == "drained"
        state, reason = node_state(host)
        assert "drain" in state and reason.startswith("rulekit: drain_and_rma: gpu-fatal blamed in 3 episodes")

        doc = fleet_apply()
        assert doc["applied"][0]["status"] == "already-ours"  # not drained twice, not resumed
        state, reason = node_state(host)
        assert "drain" in state and reason.startswith("rulekit:")
    finally:
        scontrol("update", f"nodename={host}", "state=resume")
