"""Benchmark: the load-time cost of probing Python plugins in a child process
(rulekit.rules.sandbox) before they are imported in-process.

Loads a copy of the bundled corpus (7 plugins; a copy, because the bundled folder
itself is trusted and not probed) in fresh interpreters, with the probe (what a
user gets) and without it (baseline: the copy treated as bundled), and reports
the median wall time of `load_corpus` of each and their difference and ratio,
from the same run.  Bounded: `--runs` loads of each (default 5).

    .venv/bin/python bench/plugin_probe.py [--runs 5]
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = """
import sys, time
from pathlib import Path
import rulekit.rules.loader as L
if sys.argv[2] == "baseline":
    L._is_bundled = lambda folder: True
t0 = time.perf_counter()
res = L.load_corpus([Path(sys.argv[1])])
print(time.perf_counter() - t0)
assert res.ok, [str(d) for d in res.diagnostics][:5]
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(HERE.parent))
    from rulekit.rules.loader import bundled_rules_path

    with tempfile.TemporaryDirectory() as tmp:
        rules = Path(tmp) / "rules"
        shutil.copytree(bundled_rules_path(), rules, ignore=shutil.ignore_patterns("__pycache__"))
        plugins = len(list(rules.glob("*.py")))
        times: dict[str, list[float]] = {"probed": [], "baseline": []}
        for _ in range(args.runs):
            for mode in ("baseline", "probed"):  # interleaved: the machine's load hits both alike
                out = subprocess.run([sys.executable, "-c", CHILD, str(rules), mode], capture_output=True, text=True,
                                     timeout=300, check=True)
                times[mode].append(float(out.stdout.strip().splitlines()[-1]))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(json.dumps({"plugins": plugins, "runs": args.runs,
                      "load_s_median": {k: round(v, 3) for k, v in med.items()},
                      "probe_cost_s": round(med["probed"] - med["baseline"], 3),
                      "ratio_probed_over_baseline": round(med["probed"] / med["baseline"], 2),
                      "all_s": {k: [round(x, 3) for x in v] for k, v in times.items()}}, indent=2))


if __name__ == "__main__":
    main()
