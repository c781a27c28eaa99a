"""Bad input gets a located error and nothing is lost: an unreadable log is an RK509
error (exit 1) and the other job directories are still attributed; a job.toml or
observations.jsonl that is a folder is a located error; binary logs, folders
named *.log, FIFOs (never opened) and symlink loops are skipped or ingested with
an RK510 note; a TOML syntax error is listed first with its follow-ons held back;
the text report never prints `None` and keeps its columns for long node names."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from rulekit.cli.attribute import render_text
from rulekit.engine.jobrun import attribute_dir
from rulekit.inputs.jobdir import read_job_dir
from rulekit.rules.loader import bundled_rules_path, load_corpus
from rulekit.diagnostics import RulekitError

XID79 = "kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.\n"


def job(root: Path, name: str, node: str = "n1") -> Path:
    d = root / name
    (d / "syslog").mkdir(parents=True)
    (d / "job.toml").write_text(f'[job]\nid = "{name}"\nstate = "FAILED"\nnodes = ["{node}"]\n')
    (d / "syslog" / f"{node}.log").write_text(XID79)
    return d


def _cli(*args, prefix=()):
    return subprocess.run([*prefix, sys.executable, "-m", "rulekit", *args], capture_output=True, text=True, timeout=120)


def _unreadable_prefix() -> tuple[str, ...]:
    """As root, permission bits do not stop reads: drop the capabilities that bypass them."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot make a file unreadable")
    return ("setpriv", "--bounding-set", "-dac_override,-dac_read_search")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_unreadable_log_is_located_and_other_jobs_are_attributed(tmp_path, workers):
    bad, good = job(tmp_path, "BAD"), job(tmp_path, "GOOD")
    (bad / "syslog" / "n1.log").chmod(0)
    p = _cli("attribute", str(bad), str(good), "--format", "json", "-j", workers, prefix=_unreadable_prefix())
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    res = {r["job_id"]: r for r in json.loads(p.stdout)}
    assert res["GOOD"]["outcome"] == "hardware"
    (note,) = [n for n in res["BAD"]["notes"] if n["code"] == "RK509"]
    assert note["severity"] == "error" and note["span"]["file"].endswith("syslog/n1.log")
    assert "Permission denied" in note["message"]


def test_job_toml_that_is_a_folder_is_a_located_error(tmp_path):
    d = job(tmp_path, "J")
    (d / "job.toml").unlink()
    (d / "job.toml").mkdir()
    with pytest.raises(RulekitError) as e:
        read_job_dir(d)
    (diag,) = e.value.diagnostics
    assert diag.code == "RK509" and diag.span.file.endswith("job.toml") and "folder" in diag.message
    p = _cli("attribute", str(d))
    assert p.returncode == 2 and "job.toml" in p.stderr + p.stdout and "IsADirectoryError" not in p.stderr


def test_observations_jsonl_that_is_a_folder_is_an_error_and_the_logs_still_count(tmp_path, bundled):
    d = job(tmp_path, "J")
    (d / "observations.jsonl").mkdir()
    r = attribute_dir(bundled, d)
    assert r["outcome"] == "hardware"
    (note,) = [n for n in r["notes"] if n["code"] == "RK509"]
    assert note["span"]["file"].endswith("observations.jsonl") and note["severity"] == "error"


def test_odd_entries_are_skipped_or_ingested_with_a_note(tmp_path, bundled):
    d = job(tmp_path, "J")
    app = d / "applog"
    app.mkdir()
    (app / "folder.log").mkdir()
    os.mkfifo(app / "pipe.log")  # opening it for reading would block forever
    os.symlink("loop.log", app / "loop.log")
    os.symlink("nowhere.log", app / "dangling.log")
    (app / "core.log").write_bytes(b"\x00\x00\x7fELF\x00" * 100 + b"\n" + XID79.encode())
    r = attribute_dir(bundled, d)  # returns (a FIFO opened for reading would hang here)
    notes = {Path(n["span"]["file"]).name: n for n in r["notes"] if n["code"] == "RK510"}
    assert set(notes) == {"folder.log", "pipe.log", "loop.log", "dangling.log", "core.log"}, r["notes"]
    assert "FIFO" in notes["pipe.log"]["message"] and "loop" in notes["loop.log"]["message"]
    assert "binary" in notes["core.log"]["message"]
    assert any(e["source"] == "applog/core.log" for e in r["evidence"])  # binary: ingested, not dropped


def test_fifo_named_job_toml_is_not_opened(tmp_path):
    d = job(tmp_path, "J")
    (d / "job.toml").unlink()
    os.mkfifo(d / "job.toml")
    with pytest.raises(RulekitError) as e:
        read_job_dir(d)
    assert e.value.diagnostics[0].code == "RK509"


def test_toml_syntax_error_first_and_its_follow_ons_held_back(tmp_path):
    rules = tmp_path / "R"
    shutil.copytree(bundled_rules_path(), rules)
    f = rules / "core_symptoms.toml"
    lines = f.read_text().splitlines()
    lines[4] = 'name = "broken'
    f.write_text("\n".join(lines) + "\n")
    res = load_corpus([rules])
    assert res.diagnostics[0].code == "RK002" and res.diagnostics[0].span.file == str(f)
    assert "held back" in res.diagnostics[0].message
    assert not [d for d in res.diagnostics if d.code == "RK203"]
    p = _cli("check", str(rules))
    first = next(line for line in p.stdout.splitlines() if " error " in line)
    assert "RK002" in first


def test_follow_ons_not_explained_by_the_broken_file_are_kept(make_corpus):
    rules = make_corpus({
        "a.toml": '[[extractor]\n',
        "b.toml": '''
            [[extractor]]
            name = "B"
            author = "t"
            match_re = 'b'
            emit = { type = "bad_node", symptom = "NOWHERE_DEFINED" }
        '''})
    codes = [d.code for d in load_corpus([rules]).diagnostics]
    assert codes[0] == "RK002" and "RK203" in codes


def _render(result) -> str:
    c = Console(record=True, width=200, highlight=False, soft_wrap=True)
    render_text(c, result)
    return c.export_text()


def test_text_report_has_no_none_for_job_level_evidence():
    r = {"job_id": "1", "outcome": "infrastructure", "sub_domain": "scheduler", "bad_nodes": [],
         "interesting_nodes": [], "root_cause": {"symptom": "ALLOC_FAIL", "node": None, "rule": "R",
                                                 "evidence": [{"source": None, "line_num": None, "datum": None}]},
         "evidence": [{"event_type": "symptom.bad", "symptom": "ALLOC_FAIL", "node": None, "source": None,
                       "line_num": None, "rule": "R"}]}
    text = _render(r)
    assert "None" not in text, text
    assert "(job record)" in text and "(job-level)" in text


def test_text_report_columns_survive_long_node_names():
    ev = [{"event_type": "symptom.bad", "symptom": "XID-79-FALLEN_OFF_THE_BUS", "node": "gpu-node-a100-rack17-0042",
           "source": "syslog/a.log", "line_num": 3, "rule": "R1"},
          {"event_type": "symptom.interesting", "symptom": "NCCL_X", "node": "n1", "source": "applog/t.log",
           "line_num": 12, "rule": "R2"}]
    r = {"job_id": "1", "outcome": "hardware", "sub_domain": "gpu", "bad_nodes": [], "interesting_nodes": [],
         "root_cause": None, "evidence": ev}
    rows = [line for line in _render(r).splitlines() if line.startswith("  bad") or line.startswith("  int")]
    assert len(rows) == 2
    assert rows[0].index("syslog/a.log") == rows[1].index("applog/t.log")  # the source column lines up
