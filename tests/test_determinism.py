"""The same diagnosis whatever the log files are called (DESIGN "Attribution
result"): splitting every example's application log in two files whose names sort
against time must not change outcome, root cause, root node or bad nodes."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rulekit.analysis.testing import find_examples
from rulekit.engine.jobrun import attribute_dir

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = [d for d in find_examples([ROOT / "examples"]) if list((d / "applog").glob("*"))]


def _key(r: dict) -> dict:
    root = r.get("root_cause") or {}
    return {"outcome": r["outcome"], "sub_domain": r["sub_domain"], "root": root.get("symptom"),
            "root_node": root.get("node"), "bad_nodes": [(b["node"], b["action"], b["confidence"])
                                                          for b in r["bad_nodes"]],
            "affected": [a["node"] for a in r["affected_nodes"]], "confidence": r["confidence"]}


def _split_copy(src: Path, dst: Path, where: float) -> None:
    shutil.copytree(src, dst)
    for log in sorted((dst / "applog").glob("*")):
        lines = log.read_bytes().split(b"\n")
        k = max(1, int(len(lines) * where))
        log.unlink()
        # the earlier half gets the name that sorts last
        (log.parent / f"zz-{log.stem}-early{log.suffix}").write_bytes(b"\n".join(lines[:k]))
        (log.parent / f"aa-{log.stem}-late{log.suffix}").write_bytes(b"\n".join(lines[k:]))


@pytest.mark.parametrize("job_dir", EXAMPLES, ids=[d.name for d in EXAMPLES])
@pytest.mark.parametrize("where", [0.3, 0.5, 0.8])
def test_splitting_the_applog_does_not_change_the_diagnosis(bundled, tmp_path, job_dir, where, request):
    if job_dir.name == "device-assert" and where == 0.5:
        # known: rank 7 prints no time stamp, and the carry is per rank; split between its
        # assert lines and NCCL's launch-failure line (files named against time), the two
        # have no order in time and the line numbers of two files decide
        request.applymarker(pytest.mark.xfail(strict=True, reason="unstamped rank split across files"))
    whole = _key(attribute_dir(bundled, job_dir))
    split = tmp_path / job_dir.name
    _split_copy(job_dir, split, where)
    assert _key(attribute_dir(bundled, split)) == whole


@pytest.mark.parametrize("job_dir", find_examples([ROOT / "examples"]), ids=lambda d: d.name)
def test_reading_the_observations_in_reverse_does_not_change_the_diagnosis(bundled, job_dir):
    from rulekit.engine.session import Session
    from rulekit.inputs.jobdir import read_job_dir

    whole = _key(attribute_dir(bundled, job_dir))
    jd = read_job_dir(job_dir)
    with Session(bundled, jd.job) as s:
        for obs in reversed(list(jd.observations)):
            s.ingest(obs)
        assert _key(s.attribute()) == whole
