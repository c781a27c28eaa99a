"""Held-out check of the bundled rule corpus against real-world log shapes.

Each `tests/realworld/cases/<family>.toml` holds job-level cases in the
`*.test.toml` format plus keys of our own per case: `provenance` (where the
snippet was posted: a GitHub thread as "owner/repo#N", a forum thread as
"host/path"), `collected` (the date the case was written, YYYY-MM-DD), and
optionally `known_miss` (why the corpus gets it wrong today) and `notes`
(what the thread concluded).  Every case runs through the bundled
engine and must pass; a `known_miss` case is a strict xfail, so fixing the
corpus flips it and forces the marker's removal.  This module only reads the
case files and the bundled corpus; it must not edit either.
"""
from __future__ import annotations

import datetime
import re
import tomllib
from pathlib import Path

import pytest

from rulekit.rules.model import JobTestCase, ObservationSpec
from rulekit.analysis.testing import run_job_test

CASES_DIR = Path(__file__).resolve().parent / "realworld" / "cases"
EXTRA_KEYS = {"provenance", "collected", "known_miss", "notes"}
CASE_KEYS = {"name", "job", "observation", "expect"} | EXTRA_KEYS
OBS_KEYS = {"source", "node", "lines", "format"}
EXPECT_KEYS = {"outcome", "sub_domain", "root_cause", "root_node", "bad_nodes", "symptoms",
               "absent_symptoms", "ambiguous"}
# a GitHub issue or pull request: owner/repo#N
GITHUB_THREAD = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+#\d+$")
# a forum thread (Discourse, Stack Exchange, ...): host/path, no scheme, no query, no fragment
FORUM_THREAD = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}(?:/[A-Za-z0-9._~%!$&'()*+,;=:@-]+)+/?$")


def provenance_ok(value: str) -> bool:
    """A GitHub thread as owner/repo#N, or a forum thread as host/path (GitHub itself only the first way)."""
    if GITHUB_THREAD.match(value):
        return True
    return bool(FORUM_THREAD.match(value)) and not value.lower().startswith(("github.com/", "www.github.com/"))


def collected_ok(value: object) -> bool:
    """`collected` is a calendar date written YYYY-MM-DD (a TOML string, not a TOML date)."""
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return False
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _load() -> list[tuple[str, dict, JobTestCase]]:
    out = []
    for path in sorted(CASES_DIR.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        assert set(data) == {"case"}, f"{path.name}: only [[case]] tables are allowed"
        for raw in data["case"]:
            unknown = set(raw) - CASE_KEYS
            assert not unknown, f"{path.name}: {raw.get('name')}: unknown keys {unknown}"
            obs = []
            for o in raw.get("observation", []):
                assert not set(o) - OBS_KEYS, f"{path.name}: {raw['name']}: unknown observation keys"
                lines = o["lines"]
                # a string keeps its exact bytes (CRLF, ANSI), split on \n only
                lines = lines.split("\n") if isinstance(lines, str) else [str(x) for x in lines]
                obs.append(ObservationSpec(source=o["source"], lines=tuple(lines), node=o.get("node"),
                                           format=o.get("format", "text")))
            assert not set(raw["expect"]) - EXPECT_KEYS, f"{path.name}: {raw['name']}: unknown expect keys"
            case = JobTestCase(name=raw["name"], job=raw.get("job", {}), observations=tuple(obs),
                               expect=raw["expect"])
            meta = {k: raw[k] for k in EXTRA_KEYS if k in raw}
            out.append((path.stem, meta, case))
    return out


CASES = _load()


def _params():
    for family, meta, case in CASES:
        marks = []
        if "known_miss" in meta:
            marks.append(pytest.mark.xfail(strict=True, reason=meta["known_miss"]))
        yield pytest.param(case, meta, id=f"{family}::{case.name}", marks=marks)


def test_case_files_are_well_formed():
    assert len(CASES) >= 60
    names = [(f, c.name) for f, _, c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    for family, meta, case in CASES:
        assert provenance_ok(meta.get("provenance", "")), \
            f"{family}::{case.name}: provenance is owner/repo#N or host/path"
        assert collected_ok(meta.get("collected")), f"{family}::{case.name}: collected = \"YYYY-MM-DD\""
        assert case.observations, f"{family}::{case.name}: no observations"
        assert "outcome" in case.expect, f"{family}::{case.name}: every case states the expected outcome"


@pytest.mark.parametrize("value,ok", [
    ("NVIDIA/nccl#1814", True),
    ("jade-hpc-gpu/jade-hpc-gpu.github.io#194", True),
    ("forums.developer.nvidia.com/t/bug-xid-62-gsp-watchdog-timeout/371272", True),
    ("discuss.pytorch.org/t/nccl-timeout/12345", True),
    ("serverfault.com/questions/1234/slurm-node-drained", True),
    ("NVIDIA/nccl", False),                                  # no thread number
    ("NVIDIA/nccl#", False),
    ("https://forums.developer.nvidia.com/t/x/1", False),    # no scheme
    ("forums.developer.nvidia.com", False),                  # no path
    ("forums.developer.nvidia.com/t/x/1?page=2", False),     # no query
    ("discuss.pytorch.org/t/x/1#post_3", False),             # no fragment
    ("github.com/NVIDIA/nccl/issues/1814", False),           # GitHub threads are owner/repo#N
    ("forums developer/t/x", False),
    ("", False),
])
def test_provenance_forms(value, ok):
    assert provenance_ok(value) is ok


@pytest.mark.parametrize("value,ok", [("2026-12-04", True), ("2026-02-30", False), ("2026-12-4", False),
                                      ("04.12.2026", False), (None, False), (20261204, False)])
def test_collected_is_a_date(value, ok):
    assert collected_ok(value) is ok


def test_expected_symptoms_are_registered(bundled):
    """Expectations name symptoms the corpus registers (so a miss is a miss, not a typo)."""
    for family, _, case in CASES:
        named = [case.expect.get("root_cause")] + list(case.expect.get("symptoms", [])) \
            + list(case.expect.get("absent_symptoms", []))
        for s in filter(None, named):
            assert bundled.registry.is_known(s), f"{family}::{case.name}: unregistered symptom {s}"


@pytest.mark.parametrize("case,meta", list(_params()))
def test_realworld_case(bundled, case, meta):
    result = run_job_test(bundled, case)
    assert result.error is None, result.error
    assert result.passed, (f"[{meta.get('provenance')}] " + "; ".join(result.mismatches)
                           + f"\n  actual: {result.actual}\n  fired: {sorted(result.fired)}")
