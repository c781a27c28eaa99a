"""`rulekit attribute`: text and JSON output, exit codes, clear errors (never a
traceback), several job directories in a process pool."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from rulekit.cli import app

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "xid149-nvlink"
REPO = EXAMPLE.parent.parent
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
    (out,) = json.loads(r.stdout)  # a list whatever the number of jobs: a glob does not change the shape
    assert out["outcome"] == "hardware" and out["bad_nodes"][0]["node"] == "node-02"


def test_json_lines_one_result_a_line_in_argument_order(tmp_path):
    dirs = _copies(tmp_path, 2) + [str(REPO / "examples" / "cuda-oom")]
    r = runner.invoke(app, ["attribute", *dirs, "--format", "jsonl", "-j", "2"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert [json.loads(ln)["job_id"] for ln in lines] == ["xid149-nvlink", "xid149-nvlink", "oom-1"]
    one = runner.invoke(app, ["attribute", dirs[2], "--format", "jsonl"]).stdout
    assert one.count("\n") == 1 and json.loads(one) == json.loads(lines[2])
    listed = json.loads(runner.invoke(app, ["attribute", *dirs, "--format", "json"]).stdout)
    assert listed == [json.loads(ln) for ln in lines]


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
    assert r.returncode == 0 and json.loads(r.stdout)[0]["outcome"] == "hardware"


def _copies(tmp_path, n):
    dirs = []
    for i in range(n):
        d = tmp_path / f"job{i}"
        shutil.copytree(EXAMPLE, d)
        dirs.append(str(d))
    return dirs


def _bad_dir(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "job.toml").write_text("[job]\nstate = 12\n")
    return str(bad)


def test_several_dirs_name_each_result_and_one_bad_dir_loses_nothing(tmp_path):
    good = _copies(tmp_path, 2)
    bad = _bad_dir(tmp_path)
    for j in ("1", "2"):
        r = runner.invoke(app, ["attribute", good[0], bad, good[1], "-j", j])
        assert r.exit_code == 1, r.output
        assert r.stdout.count("HARDWARE / nvlink") == 2
        assert f"({good[0]}): HARDWARE" in r.stdout and f"({good[1]}): HARDWARE" in r.stdout
        assert f"{bad}/job.toml:2:1: error RK502" in r.stderr  # located (one "error", not two), on stderr ...
        assert "error: " + bad not in r.stderr
        assert "job.toml" not in r.stdout  # ... and only there
        assert "Traceback" not in r.output


def test_several_dirs_json_keeps_argument_order_with_the_failure_in_place(tmp_path):
    good = _copies(tmp_path, 2)
    bad = _bad_dir(tmp_path)
    r = runner.invoke(app, ["attribute", good[0], bad, good[1], "-j", "2", "--format", "json"])
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert [o.get("outcome") for o in out] == ["hardware", None, "hardware"]
    assert out[1]["job_dir"].endswith("/bad") and "job.toml:2:1" in out[1]["error"]
    assert "job.toml:2:1" in r.stderr


def test_trace_is_kept_in_the_pool(tmp_path):
    """The pool path used to call attribute_dir without with_trace (--trace was lost)."""
    dirs = _copies(tmp_path, 2)
    r = runner.invoke(app, ["attribute", *dirs, "-j", "2", "--trace", "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert all(o["trace"] and any(t["rule"] == "Xid149AndNvlinkFiltering" for t in o["trace"]) for o in out)
    (single,) = json.loads(runner.invoke(app, ["attribute", dirs[0], "--trace", "--format", "json"]).stdout)
    assert out[0] == single


def test_pool_results_equal_in_process_results(tmp_path):
    dirs = _copies(tmp_path, 3) + [str(p) for p in sorted(EXAMPLE.parent.iterdir())[:4]]
    one = runner.invoke(app, ["attribute", *dirs, "-j", "1", "--format", "json"])
    two = runner.invoke(app, ["attribute", *dirs, "-j", "2", "--format", "json"])
    assert one.exit_code == two.exit_code == 0
    assert json.loads(one.stdout) == json.loads(two.stdout)


def test_an_unreadable_log_is_a_located_error_and_the_other_results_survive(tmp_path):
    """issue 14: `setpriv --bounding-set -dac_override,-dac_read_search rulekit attribute BAD GOOD`."""
    import os
    import subprocess
    import sys

    bad, good = _copies(tmp_path, 2)
    log = Path(bad) / "syslog" / "node-02.log"
    log.chmod(0)
    prefix = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            import pytest

            pytest.skip("root without setpriv cannot make a file unreadable")
        prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    exe = str(Path(sys.executable).parent / "rulekit")
    for j in ("1", "2"):
        r = subprocess.run([*prefix, exe, "attribute", bad, good, "-j", j, "--format", "json"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 1, r.stderr
        out = json.loads(r.stdout)
        assert out[1]["outcome"] == "hardware"
        # the reader inspects every log first: BAD is attributed from what it can read, and the
        # unreadable log is a located RK509 error note (rulekit.inputs.entries)
        (note,) = [n for n in out[0]["notes"] if n["code"] == "RK509"]
        assert note["severity"] == "error" and note["span"]["file"] == str(log)
        assert "Permission denied" in note["message"] and "Traceback" not in r.stderr


def test_executor_options_are_checked():
    r = runner.invoke(app, ["attribute", str(EXAMPLE), str(EXAMPLE), "--executor", "ray"])
    assert r.exit_code == 2 and "unknown executor 'ray'" in r.stderr
    r = runner.invoke(app, ["attribute", str(EXAMPLE), "--scheduler", "tcp://127.0.0.1:8786"])
    assert r.exit_code == 2 and "--scheduler needs --executor dask" in r.stderr


def test_dask_executor_from_the_cli_matches_local_and_leaves_no_cluster(tmp_path):
    import multiprocessing

    dirs = _copies(tmp_path, 2) + [_bad_dir(tmp_path)]
    local = runner.invoke(app, ["attribute", *dirs, "-j", "2", "--format", "json"])
    dask = runner.invoke(app, ["attribute", *dirs, "--executor", "dask", "-j", "2", "--format", "json"])
    assert local.exit_code == dask.exit_code == 1, dask.output
    assert json.loads(dask.stdout) == json.loads(local.stdout)
    assert "job.toml:2:1" in dask.stderr
    assert multiprocessing.active_children() == []


def test_a_progress_bar_counts_jobs_when_stderr_is_a_terminal(tmp_path):
    import os
    import pty
    import subprocess
    import sys

    dirs = _copies(tmp_path, 3)
    master, slave = pty.openpty()
    exe = str(Path(sys.executable).parent / "rulekit")
    proc = subprocess.Popen([exe, "attribute", *dirs, "-j", "2", "--format", "json"], stdout=subprocess.PIPE,
                            stderr=slave, text=True, env={**os.environ, "COLUMNS": "100", "TERM": "xterm"})
    os.close(slave)
    out, _ = proc.communicate(timeout=120)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.returncode == 0
    assert len(json.loads(out)) == 3  # stdout stays clean JSON
    assert b"attributing" in seen and b"3/3" in seen


def test_pool_json_is_the_bytes_of_the_whole_list_printed_at_the_end(tmp_path):
    """-j 2 prints each result as it comes in, rendered by the workers: the bytes must
    be those of json.dumps(list, indent=2), a failure and a repeated directory included."""
    good = _copies(tmp_path, 2)
    bad = _bad_dir(tmp_path)
    args = [good[0], bad, good[1], good[0]]
    two = runner.invoke(app, ["attribute", *args, "-j", "2", "--format", "json"])
    singles = [json.loads(runner.invoke(app, ["attribute", d, "--format", "json"]).stdout)[0] for d in args]
    assert two.exit_code == 1
    singles[1] = json.loads(two.stdout)[1]  # the failure record (exit 2 alone)
    assert two.stdout == json.dumps(singles, indent=2, default=str) + "\n"
    assert "job.toml:2:1" in singles[1]["error"]


def test_results_are_printed_in_argument_order_as_soon_as_they_can_be(tmp_path, capsys):
    """`_InOrder`: a result that finished early waits for the ones before it, then goes out at once."""
    from rulekit.cli.attribute import _InOrder, json_text
    from rulekit.executors import Job, JobOutcome

    jobs = [Job.of(tmp_path / f"j{i}") for i in range(3)]
    results = [{"job_id": f"j{i}", "n": [i, {"k": "v"}]} for i in range(3)]
    printer = _InOrder(jobs, {j: j.job_dir for j in jobs}, "json", False)
    printer.add(JobOutcome(jobs[1], result=results[1], text=json_text(results[1])))
    assert capsys.readouterr().out == ""
    printer.add(JobOutcome(jobs[0], result=results[0]))  # no worker rendering: rendered here
    first = capsys.readouterr().out
    assert first.startswith("[\n  {") and '"job_id": "j1"' in first
    printer.finish({j: JobOutcome(j, result=r) for j, r in zip(jobs, results)})
    assert first + capsys.readouterr().out == json.dumps(results, indent=2) + "\n"


def test_pool_text_is_the_text_printed_at_the_end(tmp_path):
    dirs = _copies(tmp_path, 3)
    one = runner.invoke(app, ["attribute", *dirs, "-j", "1"])
    two = runner.invoke(app, ["attribute", *dirs, "-j", "2"])
    assert one.exit_code == two.exit_code == 0
    assert one.stdout == two.stdout and one.stdout.count("HARDWARE / nvlink") == 3
