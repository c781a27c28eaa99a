"""Score the bundled corpus on the real-world cases: outcome right, outcome plus bad nodes right.

    .venv/bin/python tests/realworld/score.py [FAMILY_GLOB ...] [--collected YYYY-MM-DD ...]

With no argument every case is scored.  A glob selects case files by family (file stem, e.g.
`fabric_*`); `--collected` selects the cases written on that date (repeat it for several).  Both
narrow together.  It reuses the case loader of `tests/test_realworld.py`, runs each case on the
bundled engine and prints: the share with the right outcome; the share with the right outcome
and bad nodes; how many cases came back `unknown` although a line of their log reads as an
error; how many cases put a node in `bad_nodes` although the expected cause blames no node; the
same two rates by class of the expected cause (hardware / network / other); then every miss,
grouped by the general class of the miss.  `known_miss` markers are ignored: the score is what
the corpus does, not what the markers expect.  It only reads the case files; it must not edit them.
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rulekit.analysis.testing import run_job_test  # noqa: E402
from rulekit.rules.loader import load_corpus  # noqa: E402
from test_realworld import CASES, collected_ok  # noqa: E402

# A line that "reads as an error" for the unknown-on-an-error count.  This is a yardstick of the
# score, not part of the engine: deliberately broad words and the glog E/F and NCCL WARN forms.
ERROR_LINE = re.compile(
    r"\b(?:error|errno|fail(?:ed|ure)?|fatal|exception|abort(?:ed)?|panic|traceback|killed|"
    r"timed out|timeout|exceeded|unable|cannot|can't|denied|uncorrectable|unrecoverable|"
    r"no space left|quota|fallen off|bus error|segmentation fault|link down)\b"
    r"|\berr(?:no)?\s*[:=]|<(?:warn|error)>|\bstate:?\s+(?:1:\s*)?DOWN\b"
    r"|NCCL WARN|^\s*(?:\[[^\]]*\]\s*)*[EF]\d{4} \d\d:\d\d|\bS?Xid\b",
    re.IGNORECASE)

# miss classes, in the order they are reported
UNKNOWN_ON_ERROR = "unknown on a clear error"
WRONG_OUTCOME = "wrong outcome"
HEALTHY_BLAMED = "healthy node blamed"
CULPRIT_MISSED = "culprit missed"
MISS_CLASSES = (UNKNOWN_ON_ERROR, WRONG_OUTCOME, HEALTHY_BLAMED, CULPRIT_MISSED)


def cause_class(outcome: str) -> str:
    """The class of the expected cause: hardware, network or other."""
    return outcome if outcome in ("hardware", "network") else "other"


def has_error_line(case) -> bool:
    return any(ERROR_LINE.search(line) for obs in case.observations for line in obs.lines)


@dataclass
class Scored:
    family: str
    meta: dict
    case: object
    got_outcome: str | None
    got_root: str | None
    got_bad: list[str]
    outcome_ok: bool
    both_ok: bool
    classes: list[str] = field(default_factory=list)


def score_case(engine, family: str, meta: dict, case) -> Scored:
    actual = run_job_test(engine, case).actual or {}
    want_outcome = case.expect["outcome"]
    want_bad = sorted(case.expect.get("bad_nodes", []))
    got_outcome = actual.get("outcome")
    got_bad = sorted(actual.get("bad_nodes", []))
    outcome_ok = got_outcome == want_outcome
    states = "bad_nodes" in case.expect
    both_ok = outcome_ok and (not states or got_bad == want_bad)
    s = Scored(family, meta, case, got_outcome, actual.get("root_cause"), got_bad, outcome_ok, both_ok)
    if not outcome_ok:
        if got_outcome == "unknown" and has_error_line(case):
            s.classes.append(UNKNOWN_ON_ERROR)
        else:
            s.classes.append(WRONG_OUTCOME)
    if states:
        if set(got_bad) - set(want_bad):
            s.classes.append(HEALTHY_BLAMED)
        if set(want_bad) - set(got_bad):
            s.classes.append(CULPRIT_MISSED)
    return s


def select(globs: list[str], dates: list[str]):
    for family, meta, case in CASES:
        if globs and not any(fnmatch.fnmatch(family, g) or fnmatch.fnmatch(family + ".toml", g) for g in globs):
            continue
        if dates and meta.get("collected") not in dates:
            continue
        yield family, meta, case


def _rate(k: int, n: int) -> str:
    return f"{k}/{n} = {100 * k / n:.0f}%" if n else "0/0"


def report(scored: list[Scored], title: str) -> str:
    n = len(scored)
    threads = {s.meta.get("provenance") for s in scored}
    out = [f"{title}: {n} cases from {len(threads)} threads"]
    n_out = sum(s.outcome_ok for s in scored)
    n_both = sum(s.both_ok for s in scored)
    unknown_err = sum(UNKNOWN_ON_ERROR in s.classes for s in scored)
    healthy = sum(HEALTHY_BLAMED in s.classes and not s.case.expect.get("bad_nodes") for s in scored)
    no_node = sum(1 for s in scored if "bad_nodes" in s.case.expect and not s.case.expect["bad_nodes"])
    out.append(f"  outcome right:                        {_rate(n_out, n)}")
    out.append(f"  outcome + bad_nodes right:            {_rate(n_both, n)}")
    out.append(f"  unknown although a line reads as error: {unknown_err}")
    out.append(f"  a node blamed where no node is at fault: {healthy} (of {no_node} such cases)")
    out.append("  by class of the expected cause:")
    out.append(f"    {'class':10} {'cases':>5} {'outcome':>14} {'outcome+bad_nodes':>18}")
    for cls in ("hardware", "network", "other"):
        part = [s for s in scored if cause_class(s.case.expect["outcome"]) == cls]
        out.append(f"    {cls:10} {len(part):5} {_rate(sum(s.outcome_ok for s in part), len(part)):>14} "
                   f"{_rate(sum(s.both_ok for s in part), len(part)):>18}")
    misses = [s for s in scored if not s.both_ok]
    out.append(f"misses ({len(misses)}), by class (a case can fall in two):")
    for cls in MISS_CLASSES:
        part = [s for s in misses if cls in s.classes]
        out.append(f"  {cls} ({len(part)}):")
        for s in part:
            out.append(f"    {s.family}::{s.case.name[:100]}\n      [{s.meta.get('provenance')}] want "
                       f"{s.case.expect['outcome']} {s.case.expect.get('bad_nodes', '-')}, got "
                       f"{s.got_outcome} ({s.got_root}) {s.got_bad}")
    if not misses:
        out.append("  none")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("globs", nargs="*", metavar="FAMILY_GLOB", help="case files by family, e.g. 'fabric_*'")
    ap.add_argument("--collected", action="append", default=[], metavar="YYYY-MM-DD",
                    help="only the cases collected on this date (repeatable)")
    args = ap.parse_args(argv)
    for d in args.collected:
        if not collected_ok(d):
            ap.error(f"--collected {d!r}: expected a date YYYY-MM-DD")
    picked = list(select(args.globs, args.collected))
    if not picked:
        print("no case matches " + " ".join(args.globs + [f"--collected {d}" for d in args.collected]),
              file=sys.stderr)
        return 2
    engine = load_corpus(None).engine
    scored = [score_case(engine, f, m, c) for f, m, c in picked]
    title = " ".join(args.globs + [f"collected {d}" for d in args.collected]) or "all cases"
    try:
        print(report(scored, title))
    except BrokenPipeError:  # piped into head: not an error; silence the flush at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
