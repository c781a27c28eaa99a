"""A log folder of a job directory that cannot be listed is a located RK509 and the job
is still attributed from the rest: an unreadable `syslog/` was a bare PermissionError
(exit 2, no code, no verdict), an unreadable `applog/` (or a folder below it) was
skipped without a word."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

XID79 = "kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.\n"


def _job(root: Path, name: str) -> Path:
    d = root / name
    (d / "syslog").mkdir(parents=True)
    (d / "applog" / "sub").mkdir(parents=True)
    (d / "job.toml").write_text(f'[job]\nid = "{name}"\nstate = "FAILED"\nnodes = ["n1", "n2"]\n')
    (d / "syslog" / "n1.log").write_text(XID79)
    (d / "applog" / "rank0.log").write_text("[rank0]: step 10 loss 1.0\n")
    (d / "applog" / "sub" / "rank1.log").write_text("[rank1]: step 10 loss 1.0\n")
    return d


def _attribute(*dirs: Path) -> subprocess.CompletedProcess:
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:  # as root, permission bits do not stop reads: drop the capabilities that bypass them
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a folder unreadable")
        prefix = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search")
    return subprocess.run([*prefix, sys.executable, "-m", "rulekit", "attribute", *map(str, dirs), "--format", "json"],
                          capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("folder", ["syslog", "applog", "applog/sub"])
def test_an_unreadable_log_folder_is_located_and_the_job_still_attributed(tmp_path, folder):
    d = _job(tmp_path, "J")
    if folder == "syslog":  # the Xid must still be evidence: put it in an application log instead
        (d / "applog" / "rank0.log").write_text("n1 " + XID79)
    (d / folder).chmod(0)
    try:
        p = _attribute(d)
    finally:
        (d / folder).chmod(0o755)
    assert "Traceback" not in p.stderr and "PermissionError" not in p.stderr, p.stderr
    assert p.returncode == 1, p.stderr
    res = json.loads(p.stdout)
    res = res[0] if isinstance(res, list) else res
    notes = [n for n in res["notes"] if n["code"] == "RK509"]
    assert len(notes) == 1, res["notes"]
    assert notes[0]["span"]["file"].endswith(folder) and "Permission denied" in notes[0]["message"]
    assert res["outcome"] != "unknown" or folder == "syslog", res
