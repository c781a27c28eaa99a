"""Differential guard: every example, job test and realworld case gives the same
full result JSON (with `--trace`) as the stored snapshot.

Snapshots live in `tests/golden/results/<group>.json` (one JSON object per
group, keyed by case, canonical key order).  They pin behaviour across
refactors of the engine's internals (store, filters, scanner); a deliberate
change to results regenerates them:

    .venv/bin/python tests/test_results_unchanged.py --update

and the diff of the snapshot files is the review of that change.  This module
reads cases and the bundled corpus; it writes only with `--update`.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GOLDEN = HERE / "golden" / "results"
sys.path.insert(0, str(HERE))


def _canonical(result: dict[str, Any]) -> Any:
    """The result as the CLI's JSON would carry it (default=str), key order fixed."""
    return json.loads(json.dumps(result, sort_keys=True, default=str))


def _examples(engine) -> Iterator[tuple[str, dict]]:
    from rulekit.analysis.testing import find_examples
    from rulekit.engine.session import Session
    from rulekit.inputs.jobdir import read_job_dir

    for d in find_examples([REPO / "examples"]):
        jd = read_job_dir(d)
        with Session(engine, jd.job) as s:
            s.ingest_batch(jd.observations)
            result = s.attribute(with_trace=True)
        if jd.notes:
            result["notes"] = [n.to_dict() for n in jd.notes]
        yield d.name, result


def _run_case(engine, case) -> dict:
    from rulekit.analysis.testing import job_from_mapping
    from rulekit.engine.session import Session
    from rulekit.inputs.fleet import FleetContext
    from rulekit.inputs.observation import Observation

    job = job_from_mapping(case.job)
    fleet = FleetContext.from_dict(dict(case.fleet)) if getattr(case, "fleet", None) is not None else None
    with Session(engine, job, fleet=fleet) as s:
        for o in case.observations:
            s.ingest(Observation(source=o.source, format=o.format, node=o.node, lines=list(o.lines),
                                 label=f"{case.name}:{o.source}"))
        return s.attribute(with_trace=True)


def _job_tests(engine) -> Iterator[tuple[str, dict]]:
    for case in engine.job_tests:
        yield f"{Path(case.span.file).name if case.span else '?'}::{case.name}", _run_case(engine, case)


def _realworld(engine) -> Iterator[tuple[str, dict]]:
    from test_realworld import CASES

    for family, _meta, case in CASES:
        yield f"{family}::{case.name}", _run_case(engine, case)


GROUPS = {"examples": _examples, "job_tests": _job_tests, "realworld": _realworld}


def compute(engine, group: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, result in GROUPS[group](engine):
        assert key not in out, f"duplicate case key {key}"
        out[key] = _canonical(result)
    return out


def _path(group: str) -> Path:
    return GOLDEN / f"{group}.json"


def write(group: str, data: dict[str, Any]) -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    # one line per case: compact, and a diff names the case that changed
    lines = [json.dumps(k) + ": " + json.dumps(v, sort_keys=True, separators=(",", ":")) for k, v in sorted(data.items())]
    _path(group).write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_results_match_the_snapshot(bundled, group):
    path = _path(group)
    assert path.exists(), f"no snapshot {path}; run: python tests/test_results_unchanged.py --update"
    want = json.loads(path.read_text(encoding="utf-8"))
    got = compute(bundled, group)
    assert sorted(got) == sorted(want), (f"cases differ: new {sorted(set(got) - set(want))}, "
                                         f"gone {sorted(set(want) - set(got))}")
    changed = [k for k in sorted(want) if got[k] != want[k]]
    detail = ""
    if changed:
        k = changed[0]
        for field in sorted(set(got[k]) | set(want[k])):
            if got[k].get(field) != want[k].get(field):
                detail = (f"\nfirst: {k} field {field!r}\n  want {json.dumps(want[k].get(field))[:800]}"
                          f"\n  got  {json.dumps(got[k].get(field))[:800]}")
                break
    assert not changed, f"{len(changed)} of {len(want)} {group} results changed: {changed[:10]}{detail}"


def main(argv: list[str]) -> int:
    if argv != ["--update"]:
        print(__doc__)
        return 2
    from rulekit.rules.loader import load_corpus

    engine = load_corpus(None).engine
    assert engine is not None, "the bundled corpus does not load"
    for group in sorted(GROUPS):
        data = compute(engine, group)
        write(group, data)
        print(f"{_path(group).relative_to(REPO)}: {len(data)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
