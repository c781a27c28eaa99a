"""Score the bundled corpus on the real-world cases: outcome right, and outcome plus bad nodes right.

Run `.venv/bin/python tests/realworld/score.py [GLOB]` (default `round4_*`).  It reuses the
case loader of `tests/test_realworld.py`, runs each case on the bundled engine and prints the
two rates and every miss (the second over the cases that state `bad_nodes`).  `known_miss` markers are ignored: the score is what the corpus
does, not what the markers expect.  It only reads the case files; it must not edit them.
"""
from __future__ import annotations

import fnmatch
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rulekit.analysis.testing import compare_expect, run_job_test  # noqa: E402
from rulekit.rules.loader import load_corpus  # noqa: E402
from test_realworld import CASES  # noqa: E402


def main(pattern: str = "round4_*") -> int:
    engine = load_corpus(None).engine
    picked = [(f, m, c) for f, m, c in CASES if fnmatch.fnmatch(f, pattern)]
    threads = {m.get("provenance") for _, m, _ in picked}
    n_out = n_both = n_stated = 0
    misses = []
    for family, meta, case in picked:
        res = run_job_test(engine, case)
        actual = res.actual or {}
        got = {"outcome": actual.get("outcome"),
               "bad_nodes": [{"node": n} for n in actual.get("bad_nodes", [])]}
        out_ok = not compare_expect({"outcome": case.expect["outcome"]}, got)
        states = "bad_nodes" in case.expect
        both_ok = out_ok and (not states or not compare_expect({"bad_nodes": case.expect["bad_nodes"]}, got))
        n_out += out_ok
        n_stated += states
        n_both += both_ok and states
        if not both_ok:
            misses.append(f"  {family}::{case.name[:90]}\n      [{meta.get('provenance')}] want "
                          f"{case.expect['outcome']} {case.expect.get('bad_nodes', '-')}, got "
                          f"{actual.get('outcome')} ({actual.get('root_cause')}) {actual.get('bad_nodes')}")
    n = len(picked)
    print(f"{pattern}: {n} cases from {len(threads)} threads")
    print(f"  outcome right:           {n_out}/{n} = {100 * n_out / max(n, 1):.0f}%")
    print(f"  outcome + bad_nodes:     {n_both}/{n_stated} = {100 * n_both / max(n_stated, 1):.0f}%"
          f"  (cases that state bad_nodes)")
    print("misses:")
    print("\n".join(misses) if misses else "  none")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
