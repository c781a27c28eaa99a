"""`rulekit check --watch` / `rulekit test --watch`: run, then again on every change
of a watched file; bounded runs (RULEKIT_WATCH_MAX_RUNS) and Ctrl-C end cleanly."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rulekit.cli.watch import changed, snapshot

from corpora import ONE_TESTED_RULE



def _start(tmp_path: Path, *args: str, runs: int | None = 2) -> tuple[subprocess.Popen, Path, Path]:
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    env = dict(os.environ)
    if runs:
        env["RULEKIT_WATCH_MAX_RUNS"] = str(runs)
    # Ctrl-C as a user's terminal delivers it: a suite started in the background (a shell's `&`)
    # hands its children SIGINT ignored, and Python then installs no KeyboardInterrupt
    p = subprocess.Popen([sys.executable, "-m", "rulekit", *args], stdout=out.open("w"), stderr=err.open("w"), env=env,
                         preexec_fn=_default_sigint)
    return p, out, err


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for(path: Path, text: str, count: int = 1, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.read_text().count(text) >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"{text!r} did not appear {count}x in {path}: {path.read_text()!r}")


def _bump(f: Path, text: str) -> None:
    f.write_text(text)
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))  # a coarse-mtime file system still sees it


def test_check_watch_reruns_on_change(tmp_path):
    rules = tmp_path / "R"
    rules.mkdir()
    (rules / "a.toml").write_text(ONE_TESTED_RULE)
    p, out, err = _start(tmp_path, "check", str(rules), "--watch")
    try:
        _wait_for(err, "watching")
        assert "no problems found" in out.read_text()
        _bump(rules / "a.toml", ONE_TESTED_RULE.replace("match_re", "matchre"))
        assert p.wait(60) == 1  # the second run's status
    finally:
        p.kill() if p.poll() is None else None
    text = out.read_text()
    assert text.count("no problems found") == 1 and "RK101" in text
    assert "changed: a.toml" in err.read_text()


def test_test_watch_reruns_and_ctrl_c_stops_cleanly(tmp_path):
    rules = tmp_path / "R"
    rules.mkdir()
    (rules / "a.toml").write_text(ONE_TESTED_RULE)
    p, out, err = _start(tmp_path, "test", str(rules), "--watch", runs=None)
    try:
        _wait_for(err, "watching")
        assert "2 passed, 0 failed" in out.read_text()
        _bump(rules / "a.toml", ONE_TESTED_RULE.replace('line = "bar"', 'line = "foo fault again"'))
        _wait_for(out, "1 passed, 1 failed")
        _wait_for(err, "watching", count=2)
        p.send_signal(signal.SIGINT)
        assert p.wait(30) == 1
    finally:
        p.kill() if p.poll() is None else None
    assert "Traceback" not in err.read_text() and "stopped watching" in err.read_text()


def test_snapshot_sees_new_changed_and_deleted_files(tmp_path):
    (tmp_path / "a.toml").write_text("x")
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "h.py").write_text("y")
    s1 = snapshot([tmp_path])
    (tmp_path / "b.rule").write_text("z")
    (tmp_path / "common" / "h.py").write_text("yy")
    (tmp_path / "a.toml").unlink()
    moved = changed(s1, snapshot([tmp_path]))
    assert [Path(p).name for p in moved] == ["a.toml", "b.rule", "h.py"]
