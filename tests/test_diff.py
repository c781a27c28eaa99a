"""`rulekit diff`: the same job directories attributed with two rule revisions (a
git ref or a folder); what moved in text, JSON and GitHub annotations; exit 1
when a revision breaks an `expected.json`."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rulekit.analysis.diff import diff_jobs, find_job_dirs
from rulekit.rules.loader import bundled_rules_path, load_corpus

REPO = Path(__file__).resolve().parent.parent
JOBS = ["xid79-offbus", "xid149-nvlink", "cuda-oom", "slurm-timeout"]
OLD_SYMPTOM = 'name = "XID-79-FALLEN_OFF_THE_BUS"\noutcome = "hardware"'
NEW_SYMPTOM = 'name = "XID-79-FALLEN_OFF_THE_BUS"\noutcome = "network"'


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path) -> Path:
    """A rule repository: rules/ (a copy of the bundled corpus, `bundled = false` in its rulekit.toml) and
    examples/ (four golden jobs), one commit."""
    shutil.copytree(bundled_rules_path(), tmp_path / "rules", ignore=shutil.ignore_patterns("__pycache__"))
    # a copy of the bundled corpus is a corpus of its own: not on top of the bundled rules
    (tmp_path / "rulekit.toml").write_text("bundled = false\n")
    for j in JOBS:
        shutil.copytree(REPO / "examples" / j, tmp_path / "examples" / j)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "rules")
    return tmp_path


def _edit(repo: Path) -> None:
    f = repo / "rules" / "xid_catalog.toml"
    text = f.read_text()
    assert OLD_SYMPTOM in text
    f.write_text(text.replace(OLD_SYMPTOM, NEW_SYMPTOM))


def _diff(repo: Path, *args: str):
    return subprocess.run([sys.executable, "-m", "rulekit", "diff", *args], cwd=repo, capture_output=True, text=True,
                          timeout=300)


def test_git_ref_against_the_working_tree_reports_what_moved(repo):
    _edit(repo)
    p = _diff(repo, "HEAD", "--rules", "rules", "--jobs", "examples")
    assert p.returncode == 1, p.stderr  # xid79's expected.json now fails
    out = p.stdout
    assert "base HEAD:rules" in out and "1 job changed outcome" in out, out
    assert "xid79" in out and "outcome     hardware → network" in out
    assert "BROKEN examples/xid79-offbus/expected.json (newly broken)" in out
    assert "outcome: expected 'hardware', got 'network'" in out


def test_json_and_github_formats(repo):
    _edit(repo)
    p = _diff(repo, "HEAD", "--rules", "rules", "--jobs", "examples", "--format", "json")
    doc = json.loads(p.stdout)
    assert doc["summary"]["jobs"] == 4 and doc["summary"]["outcome"] == 1 and doc["summary"]["newly_broken"] == 1
    (moved,) = [j for j in doc["jobs"] if j["changes"]]
    assert moved["changes"]["outcome"] == {"old": "hardware", "new": "network"}
    assert moved["expected"]["newly_broken"] is True
    p = _diff(repo, "HEAD", "--rules", "rules", "--jobs", "examples", "--format", "github")
    lines = p.stdout.splitlines()
    assert lines[0].startswith("::notice title=rulekit diff::1 job changed outcome")
    (err,) = [x for x in lines if x.startswith("::error")]
    assert "file=examples/xid79-offbus/expected.json,line=1" in err and "hardware → network" in err


def test_two_folders_and_a_root_cause_change(repo, tmp_path):
    head = tmp_path / "head_rules"
    shutil.copytree(repo / "rules", head)
    f = head / "xid_catalog.toml"
    f.write_text(f.read_text().replace("rank = 960", "rank = 1", 1))  # XID-79 no longer wins
    p = _diff(repo, str(repo / "rules"), str(head), "--jobs", "examples", "--format", "json")
    doc = json.loads(p.stdout)
    assert doc["summary"]["root_cause"] >= 1, doc["headline"]
    assert doc["headline"].startswith(f"{doc['summary']['root_cause']} job")
    assert p.returncode == 1  # xid79's expected root cause is broken


def test_identical_revisions_change_nothing_and_exit_0(repo):
    p = _diff(repo, "HEAD", "--rules", "rules", "--jobs", "examples")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no job changed (4 compared)" in p.stdout and "4 of 4 hold" in p.stdout


def test_bad_revision_and_missing_jobs_are_usage_errors(repo):
    p = _diff(repo, "no-such-ref", "--rules", "rules", "--jobs", "examples")
    assert p.returncode == 2 and "neither a folder nor a git revision" in p.stderr
    p = _diff(repo, "HEAD", "--rules", "rules", "--jobs", "nowhere")
    assert p.returncode == 2 and "no such job folder" in p.stderr


def test_diff_jobs_reports_unreadable_jobs_without_raising(tmp_path, bundled):
    (tmp_path / "j" / "job.toml").parent.mkdir()
    (tmp_path / "j" / "job.toml").write_text("[job\n")
    rep = diff_jobs(bundled, bundled, find_job_dirs([tmp_path]))
    assert len(rep.jobs) == 1 and "error" in rep.jobs[0].base and not rep.jobs[0].changed
