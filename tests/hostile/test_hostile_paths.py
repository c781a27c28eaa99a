"""Untrusted names (scheduler data: node, job, user and job names) never name a path
outside a connector's root, nor break out of a query or a URL segment: refused,
recorded as the connector's fault, and the attempt is still attributed and stored."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from rulekit.blueprint.config import load_config
from rulekit.blueprint.model import Attempt
from rulekit.blueprint.orchestrator import Attributor, attribute_attempt

T0 = datetime(2026, 6, 1, 3, 0, tzinfo=timezone.utc)
XID = ("Jun  1 03:12:40 {node} kernel: [ 5860.118900] NVRM: Xid (PCI:0008:01:00): 79, pid=1, "
       "GPU has fallen off the bus.")


def _setup(tmp_path: Path, root: str = "evidence/{job_id}", glob: str = "syslog/{node}.log*") -> Path:
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "bp.toml").write_text(f"""
[[context]]
type = "static"
[[context.job]]
id = "placeholder"
[[logs]]
type = "local"
name = "files"
root = "{root}"
[[logs.files]]
source = "syslog"
glob = "{glob}"
""")
    ev = tmp_path / "cfg" / "evidence" / "job1" / "syslog"
    ev.mkdir(parents=True)
    (ev / "node-01.log").write_text(XID.format(node="node-01") + "\n")
    secret = tmp_path / "cfg" / "secret"  # outside the job's folder, inside the config's
    secret.mkdir()
    (secret / "x.log").write_text("TOP SECRET " + XID.format(node="x") + "\n")
    (tmp_path / "cfg" / "evidence" / "other.log").write_text("another job's file\n")
    return tmp_path / "cfg"


def _run(cfgdir: Path, attempt: Attempt, engine) -> dict:
    cfg = load_config(cfgdir)
    return attribute_attempt(cfg, Attributor(engine=engine), attempt)


def _stored_text(result: dict) -> str:
    v = result["verdict"] or {}
    return " ".join(str(e.get("datum")) + str(e.get("source")) for e in v.get("evidence", []))


@pytest.mark.parametrize("node", ["../../../secret/x", "../../../secret/x\0", "..", "a/../../../../secret/x"])
def test_a_node_name_cannot_read_outside_the_job_folder(tmp_path, bundled, node):
    cfgdir = _setup(tmp_path)
    a = Attempt("job1", 0, ("node-01", node), T0, T0, state="FAILED")
    r = _run(cfgdir, a, bundled)
    assert "TOP SECRET" not in _stored_text(r) and "secret" not in _stored_text(r)
    cov = {c["collector"]: c for c in r["coverage"]["collectors"]}["files"]
    assert cov["status"] == "partial", cov
    assert "refused" in cov["error"] and "node" in cov["error"]
    # the good node's evidence is still there, and the attempt is attributed and marked incomplete
    assert r["verdict"]["outcome"] == "hardware" and r["coverage"]["complete"] is False
    assert r["verdict"]["evidence_complete"] is False


@pytest.mark.parametrize("field,value", [("job_id", "../../secret"), ("job_id", ".."), ("user", "../secret"),
                                         ("name", "../../secret")])
def test_job_user_and_job_names_cannot_escape_the_root(tmp_path, bundled, field, value):
    cfgdir = _setup(tmp_path, root="evidence/{job_id}/{user}{job_name}", glob="x.log")
    kw = {"job_id": "job1", "user": "", "name": ""}
    kw[field] = value
    a = Attempt(kw["job_id"], 0, ("node-01",), T0, T0, state="FAILED", user=kw["user"] or None,
                name=kw["name"] or None)
    r = _run(cfgdir, a, bundled)
    assert "TOP SECRET" not in _stored_text(r)
    cov = {c["collector"]: c for c in r["coverage"]["collectors"]}["files"]
    assert cov["status"] == "failed" and "refused" in cov["error"], cov
    assert r["verdict"] is not None  # attributed on what was gathered


def test_a_symlink_out_of_the_job_folder_is_refused(tmp_path, bundled):
    cfgdir = _setup(tmp_path)
    (cfgdir / "evidence" / "job1" / "syslog" / "node-02.log").symlink_to(cfgdir / "secret" / "x.log")
    a = Attempt("job1", 0, ("node-01", "node-02"), T0, T0, state="FAILED")
    r = _run(cfgdir, a, bundled)
    assert "TOP SECRET" not in _stored_text(r)
    cov = {c["collector"]: c for c in r["coverage"]["collectors"]}["files"]
    assert cov["status"] == "partial" and "outside" in cov["error"]


def test_glob_characters_in_a_name_match_only_that_name(tmp_path, bundled):
    cfgdir = _setup(tmp_path)
    a = Attempt("job1", 0, ("*",), T0, T0, state="FAILED")
    r = _run(cfgdir, a, bundled)
    cov = {c["collector"]: c for c in r["coverage"]["collectors"]}["files"]
    assert cov["observations"] == 0  # "*" is a name, not a pattern: node-01's file is not "*"'s


def test_ordinary_names_still_work(tmp_path, bundled):
    cfgdir = _setup(tmp_path)
    a = Attempt("job1", 0, ("node-01",), T0, T0, state="FAILED")
    r = _run(cfgdir, a, bundled)
    cov = {c["collector"]: c for c in r["coverage"]["collectors"]}["files"]
    assert cov["status"] == "ok" and cov["observations"] == 1 and r["coverage"]["complete"] is True
    assert r["verdict"]["outcome"] == "hardware"
