"""Held-out check of the bundled rule corpus against real-world log shapes.

Each `tests/realworld/cases/<family>.toml` holds job-level cases in the
`*.test.toml` format plus two keys of our own per case: `provenance`
("owner/repo#N", where the snippet was posted) and optionally `known_miss`
(why the corpus gets it wrong today).  Every case runs through the bundled
engine and must pass; a `known_miss` case is a strict xfail, so fixing the
corpus flips it and forces the marker's removal.  This module only reads the
case files and the bundled corpus; it must not edit either.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from rulekit.rules.model import JobTestCase, ObservationSpec
from rulekit.analysis.testing import run_job_test

CASES_DIR = Path(__file__).resolve().parent / "realworld" / "cases"
EXTRA_KEYS = {"provenance", "known_miss", "notes"}
CASE_KEYS = {"name", "job", "observation", "expect"} | EXTRA_KEYS
OBS_KEYS = {"source", "node", "lines", "format"}
EXPECT_KEYS = {"outcome", "sub_domain", "root_cause", "root_node", "bad_nodes", "symptoms",
               "absent_symptoms", "ambiguous"}
PROVENANCE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+#\d+$")


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
        assert PROVENANCE.match(meta.get("provenance", "")), f"{family}::{case.name}: provenance owner/repo#N"
        assert case.observations, f"{family}::{case.name}: no observations"
        assert "outcome" in case.expect, f"{family}::{case.name}: every case states the expected outcome"


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
