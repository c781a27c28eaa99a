"""Many jobs at once: `rulekit attribute DIR...` with one worker against one per core.

Builds N copies of the seed example, each padded with a benign training log of
SIZE MiB (seeded, reproducible) under bench/.data/many/, then times
`rulekit attribute --format json -j 1` and `-j <cores>` on all of them in the same
run and prints wall times and the speed-up ratio.  The results of both runs must
be identical.  Usage: python bench/attribute_many.py [--jobs-count 8] [--size-mb 32]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "xid149-nvlink"
DATA = REPO / "bench" / ".data" / "many"


def benign_lines(rng: random.Random, n: int):
    for i in range(n):
        r = rng.random()
        if r < 0.7:
            yield (f"{rng.randrange(32)}: [2026-06-01 03:{i // 60 % 60:02d}:{i % 60:02d}] iteration {i:>8}/ 1000000 | "
                   f"consumed samples: {i * 512:>12} | elapsed time per iteration (ms): {rng.uniform(900, 1100):.1f} | "
                   f"learning rate: 2.999E-04 | lm loss: {rng.uniform(1.5, 3.5):.6E} | loss scale: 1.0 | "
                   f"grad norm: {rng.uniform(0.5, 1.5):.3f} | number of skipped iterations:   0 |")
        elif r < 0.9:
            yield (f"{rng.randrange(32)}: node-0{rng.randrange(1, 5)}:{rng.randrange(1000, 99999)}:{rng.randrange(1000, 99999)} "
                   f"[{rng.randrange(8)}] NCCL INFO Channel {rng.randrange(32):02d}/0 : {rng.randrange(32)}[{rng.randrange(8)}] -> "
                   f"{rng.randrange(32)}[{rng.randrange(8)}] via P2P/IPC/read")
        else:
            yield f"{rng.randrange(32)}: [INFO] saving checkpoint at iteration {i} to /checkpoints/run-7/iter_{i:07d}"


def build(count: int, size_mb: int) -> list[Path]:
    dirs = []
    for k in range(count):
        d = DATA / f"job{k:02d}-{size_mb}m"
        dirs.append(d)
        marker = d / ".complete"
        if marker.exists():
            continue
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(EXAMPLE, d)
        rng = random.Random(1000 + k)
        target = size_mb << 20
        with open(d / "applog" / "benign.log", "w") as f:
            written = 0
            for line in benign_lines(rng, 10**9):
                f.write(line + "\n")
                written += len(line) + 1
                if written >= target:
                    break
        marker.write_text("ok")
    return dirs


def run(dirs: list[Path], workers: int) -> tuple[float, list]:
    exe = Path(sys.executable).parent / "rulekit"
    t = time.perf_counter()
    out = subprocess.run([str(exe), "attribute", *map(str, dirs), "--format", "json", "-j", str(workers)],
                         check=True, capture_output=True, text=True)
    return time.perf_counter() - t, json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs-count", type=int, default=8)
    ap.add_argument("--size-mb", type=int, default=32)
    args = ap.parse_args()
    dirs = build(args.jobs_count, args.size_mb)
    cores = os.cpu_count() or 1
    t1, r1 = run(dirs, 1)
    tn, rn = run(dirs, cores)
    same = [(r["outcome"], r["root_cause"]) for r in r1] == [(r["outcome"], r["root_cause"]) for r in rn]
    total = args.jobs_count * args.size_mb
    print(f"{args.jobs_count} jobs x {args.size_mb} MiB = {total} MiB, {cores} core(s)")
    print(f"  -j 1     : {t1:7.2f} s  ({total / t1:7.1f} MiB/s)")
    print(f"  -j {cores:<5} : {tn:7.2f} s  ({total / tn:7.1f} MiB/s)")
    print(f"  speed-up : {t1 / tn:.2f}x   results identical: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
