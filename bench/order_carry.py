"""Cost of carrying timestamps to unstamped lines (rulekit/extract/hitfacts.py TimeCarry):
attribute the padded xid149-nvlink job of bench/attribute_e2e.py in-process,
alternating the real carry with one that never looks back (its search for the last
stamped line of a hit's rank, `_last_clock_line`, finds nothing: serially and in scan
workers alike), same run.

    .venv/bin/python bench/order_carry.py [--size-mb 64] [--rounds 4]

Prints the wall times of each variant and the ratio of the medians.  Bounded:
`rounds` x 2 attributions of one job directory.  Not part of `make test`.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from attribute_e2e import build_job  # noqa: E402

from rulekit import setup_rules  # noqa: E402
from rulekit.extract import hitfacts  # noqa: E402
from rulekit.engine.jobrun import attribute_dir  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=4)
    a = ap.parse_args()
    job = build_job(HERE / ".data" / f"order-carry-{a.size_mb}", a.size_mb)
    engine = setup_rules()
    real = hitfacts._last_clock_line
    variants = {"carry": real, "no-carry": lambda *a, **k: None}
    times: dict[str, list[float]] = {k: [] for k in variants}
    attribute_dir(engine, job)  # warm-up (page cache, imports)
    for _ in range(a.rounds):
        for name, fn in variants.items():
            hitfacts._last_clock_line = fn
            t = time.perf_counter()
            r = attribute_dir(engine, job)
            times[name].append(time.perf_counter() - t)
            assert r["root_cause"]["symptom"] == "XID-149-NVLINK_SIGNAL_INTEGRITY", r["root_cause"]
    hitfacts._last_clock_line = real
    for name, ts in times.items():
        print(f"{name:9} " + " ".join(f"{t:.2f}s" for t in ts) + f"  median {statistics.median(ts):.2f}s")
    print(f"carry / no-carry (medians): {statistics.median(times['carry']) / statistics.median(times['no-carry']):.3f}")


if __name__ == "__main__":
    main()
