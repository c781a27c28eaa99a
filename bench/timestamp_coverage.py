"""How many evidence lines that print a wall-clock stamp get it as their timestamp.

    .venv/bin/python bench/timestamp_coverage.py [--all-evidence] [--misses N]

Attributes every job of `examples/` and every case of `tests/realworld/cases/` with the
bundled corpus, and counts, over the evidence each result lists (the root cause's and
the trail's, each line once per job), the lines whose text holds a date and a clock
(found by the broad patterns below, written apart from `rulekit.extract.linectx` so the
measure does not grade the parser with itself) and, of those, the ones whose evidence
has that line's own stamp (`time_source` "line"): a `timestamp`, or, for a stamp that
prints no year (glog, syslog) in a job whose year nothing tells, its `time_of_year`
(counted apart: "year unknown").  `--all-evidence` lifts the
result's evidence caps (every stored event).  Prints the share per set and overall,
and the first `--misses` lines that were missed.  Reads only; writes nothing.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from rulekit.config import EngineOptions  # noqa: E402
from rulekit.engine.jobrun import attribute_dir  # noqa: E402
from rulekit.engine.session import Session  # noqa: E402
from rulekit.analysis.testing import job_from_mapping  # noqa: E402
from rulekit.inputs.observation import Observation  # noqa: E402
from rulekit.rules.loader import load_corpus  # noqa: E402

_MON = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# a date and a clock together, in any of the shapes logs print (broad on purpose)
STAMP = re.compile(
    r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}[T _]?\d{1,2}:\d\d:\d\d"  # ISO, slash, dotted dates
    r"|\b" + _MON + r"\s+\d{1,2},?\s+(?:\d{4}\s+)?\d{1,2}:\d\d:\d\d"  # syslog, dmesg -T, `date`
    r"|(?:^|[^A-Za-z0-9])[IWEF]\d{3,4}\s+\d\d:\d\d:\d\d"  # glog / c10
    r"|\d{1,2}/" + _MON + r"/\d{4}:\d\d:\d\d:\d\d"  # common log format
)


def _evidence_lines(result: dict) -> list[dict]:
    """The result's evidence items, each (source, line) once."""
    seen, out = set(), []
    for ev in [*((result.get("root_cause") or {}).get("evidence") or []), *result.get("evidence", [])]:
        key = (ev.get("source"), ev.get("line_num"), ev.get("datum"))
        if key in seen:
            continue
        seen.add(key)
        out.append(ev)
    return out


def _examples(engine) -> list[tuple[str, dict]]:
    out = []
    for d in sorted((ROOT / "examples").iterdir()):
        if (d / "job.toml").exists():
            out.append((f"examples/{d.name}", attribute_dir(engine, d)))
    return out


def _realworld(engine) -> list[tuple[str, dict]]:
    from test_realworld import CASES

    out = []
    for family, _meta, case in CASES:
        with Session(engine, job_from_mapping(case.job)) as s:
            for o in case.observations:
                s.ingest(Observation(source=o.source, format=o.format, node=o.node, lines=list(o.lines),
                                     label=f"{case.name}:{o.source}"))
            out.append((f"{family}::{case.name[:60]}", s.attribute()))
    return out


def count(results: list[tuple[str, dict]]) -> tuple[int, int, int, list[str]]:
    stamped = got = no_year = 0
    misses = []
    for where, result in results:
        for ev in _evidence_lines(result):
            datum = ev.get("datum") or ""
            if not STAMP.search(datum[:200]):
                continue
            stamped += 1
            if ev.get("time_source", "line") == "line" and (ev.get("timestamp") or ev.get("time_of_year")):
                got += 1
                no_year += not ev.get("timestamp")
            else:
                misses.append(f"{where}: {datum[:140]}")
    return stamped, got, no_year, misses


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--all-evidence", action="store_true", help="lift the result's evidence caps")
    ap.add_argument("--misses", type=int, default=20)
    a = ap.parse_args()
    opts = EngineOptions.from_env()
    if a.all_evidence:
        opts = opts.with_(evidence_per_key=10**6, evidence_max=10**6)
    engine = load_corpus(None, options=opts).engine
    total_s = total_g = total_n = 0
    all_misses: list[str] = []
    for name, results in (("examples", _examples(engine)), ("realworld", _realworld(engine))):
        s, g, n, m = count(results)
        total_s, total_g, total_n = total_s + s, total_g + g, total_n + n
        all_misses += m
        print(f"{name:10} {len(results):4d} jobs  {s:5d} stamped evidence lines  {g:5d} with their stamp"
              f"  {100 * g / max(s, 1):5.1f}%  ({n} of them year unknown)")
    print(f"{'overall':10} {'':4}       {total_s:5d} stamped evidence lines  {total_g:5d} with their stamp"
          f"  {100 * total_g / max(total_s, 1):5.1f}%  ({total_n} of them year unknown)")
    if all_misses and a.misses:
        print(f"missed ({len(all_misses)}), the first {min(a.misses, len(all_misses))}:")
        for m in all_misses[:a.misses]:
            print("  " + m)
    return 0


if __name__ == "__main__":
    sys.exit(main())
