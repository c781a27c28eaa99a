"""`rulekit attribute`: text and JSON output, exit codes, clear errors (never a
traceback), several job directories in a process pool."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from rulekit.cli import app

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "xid149-nvlink"
runner = CliRunner()


def test_text_diagnosis():
    r = runner.invoke(app, ["attribute", str(EXAMPLE)])
    assert r.exit_code == 0, r.output
    assert "HARDWARE / nvlink" in r.output
    assert "Root cause: XID-149-NVLINK_SIGNAL_INTEGRITY on node-02" in r.output
    assert "syslog/node-02.log:5" in r.output


def test_json_contract():
    r = runner.invoke(app, ["attribute", str(EXAMPLE), "--format", "json"])
    assert r.exit_code == 0
    out = json.loads(r.stdout)
    assert out["outcome"] == "hardware" and out["bad_nodes"][0]["node"] == "node-02"


def test_trace_option_prints_the_phases():
    r = runner.invoke(app, ["attribute", str(EXAMPLE), "--trace"])
    assert "Trace:" in r.output and "Xid149AndNvlinkFiltering" in r.output


def test_missing_dir_is_a_clear_error_with_exit_2(tmp_path):
    r = runner.invoke(app, ["attribute", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "not a job directory" in r.output and "Traceback" not in r.output


def test_bad_job_toml_is_exit_2_with_position(tmp_path):
    (tmp_path / "job.toml").write_text("[job]\nstate = 12\n")
    r = runner.invoke(app, ["attribute", str(tmp_path)])
    assert r.exit_code == 2 and "job.toml:2:1" in r.output and "Traceback" not in r.output
    assert r.output.count("RK502") == 1  # printed once


def test_invalid_rules_folder_reports_diagnostics_and_exit_2(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "bad.toml").write_text("[[extractor]]\nname = 'x'\nmatch_re = 'a(?=b)'\nemit = {type='bad_node', symptom='NOPE'}\n")
    r = runner.invoke(app, ["attribute", str(EXAMPLE), "--rules", str(rules)])
    assert r.exit_code == 2
    assert "RK302" in r.output and "RK203" in r.output and "bad.toml:3:" in r.output


def test_many_job_dirs_in_a_process_pool(tmp_path):
    dirs = []
    for i in range(3):
        d = tmp_path / f"job{i}"
        shutil.copytree(EXAMPLE, d)
        dirs.append(str(d))
    r = runner.invoke(app, ["attribute", *dirs, "--format", "json", "--jobs", "2"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert [o["root_cause"]["node"] for o in out] == ["node-02"] * 3


def test_empty_folder_is_unknown_with_a_note(tmp_path):
    r = runner.invoke(app, ["attribute", str(tmp_path)])
    assert r.exit_code == 0 and "UNKNOWN" in r.output and "RK505" in r.output


def test_python_dash_m_runs_the_cli():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "rulekit", "attribute", str(EXAMPLE), "--format", "json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["outcome"] == "hardware"
