"""Many jobs at once: `rulekit attribute DIR... -j 1` against `-j N`, and how close
`-j N` comes to the bound the serial start-up leaves.

    .venv/bin/python bench/attribute_many.py [--jobs-count 6] [--size-mb 16] [--sizes-mb 4,8,32,...]
        [--workers 2] [--rounds 3] [--log realistic|benign] [--cli PATH] [--baseline-cli PATH] [--text]

Job directories: copies of examples/xid149-nvlink whose application log is
SIZE MiB of the realistic training log `bench/attribute_vs_rg.py` builds (~1.8 %
evidence lines; `--log benign`: the benign log of `build()`, which
bench/batch_dask.py uses), cached under bench/.data/.  `--sizes-mb` gives each
job its own size (unequal jobs: the case largest-first dispatch is for).

Timed, in interleaved rounds (so a burst of load from others hits every
variant alike): the installed `rulekit attribute --format json` (or text with
`--text`, stdout a file) on all the directories at `-j 1` and `-j N`, a user's
settings (no RULEKIT_* variables).  Per variant: best and median wall seconds,
and CPU seconds (user + sys of the command and its waited-for workers, which
load does not stretch).  `--baseline-cli` adds the `-j N` run of another
checkout's CLI (e.g. /work/main/.venv/bin/rulekit) to every round: before/after
ratios from the same run.

The serial floor: the best wall time of `rulekit attribute` on the seed example
alone (interpreter, imports, corpus load, rendering: what every run pays once,
before any worker can start) is S; with T1 the `-j 1` time, the best `-j N` can
do is S + (T1 - S) / N, printed as the bound beside the measured ratio.  The
results of every run must be identical (exit 1 otherwise).  Bounded: a few
rounds of a few seconds each.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
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
    """`count` job directories, each padded with SIZE MiB of benign log (bench/batch_dask.py uses these)."""
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


def build_realistic(sizes: list[float]) -> list[Path]:
    """One job directory per size with the realistic log of bench/attribute_vs_rg.py
    (built once per size, then hard-linked: the copies share the page cache)."""
    sys.path.insert(0, str(REPO / "bench"))
    import attribute_vs_rg as vs

    vs.DATA.mkdir(parents=True, exist_ok=True)
    material = None
    dirs, seen = [], {}
    for size in sizes:
        k = seen[size] = seen.get(size, -1) + 1
        d = vs.DATA / f"many-{size:g}MiB-{k}"
        if not (d / "job.toml").exists():
            base = vs.DATA / f"realistic-{size:g}MiB"
            if not (base / ".complete").exists():
                material = material or vs.corpus_material()
            base = vs.build_job(f"realistic-{size:g}MiB", size, vs.REALISTIC_INJECT * 100, True, material)
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(base, d, copy_function=lambda s, t_: Path(t_).hardlink_to(s))
        dirs.append(d)
    return dirs


def run(cli: Path, args: list[str]) -> dict:
    """One command: wall seconds, CPU seconds (its waited-for workers included) and stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULEKIT_") and k != "PYTHONDONTWRITEBYTECODE"}
    out = DATA / f".stdout-{os.getpid()}"
    with open(out, "wb") as f:
        t = time.perf_counter()
        p = subprocess.Popen([str(cli), "attribute", *args], stdout=f, stderr=subprocess.PIPE, env=env)
        _pid, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
    err = p.stderr.read().decode("utf-8", "replace") if p.stderr else ""
    if p.stderr:
        p.stderr.close()
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        raise SystemExit(f"{cli} attribute failed ({rc}): {err[-1500:]}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "out": out.read_bytes()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs-count", type=int, default=6)
    ap.add_argument("--size-mb", type=float, default=16)
    ap.add_argument("--sizes-mb", help="comma list: one job per size (overrides --jobs-count/--size-mb)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--log", choices=("realistic", "benign"), default="realistic")
    ap.add_argument("--text", action="store_true", help="time the text output instead of --format json")
    ap.add_argument("--cli", type=Path, default=Path(sys.executable).with_name("rulekit"))
    ap.add_argument("--baseline-cli", type=Path, help="another checkout's rulekit: its -j N in every round too")
    args = ap.parse_args(argv)
    sizes = [float(s) for s in args.sizes_mb.split(",")] if args.sizes_mb else [args.size_mb] * args.jobs_count
    DATA.mkdir(parents=True, exist_ok=True)
    if args.log == "realistic":
        dirs = build_realistic(sizes)
    else:
        if len(set(sizes)) != 1:
            raise SystemExit("--log benign takes one --size-mb")
        dirs = build(len(sizes), int(sizes[0]))
    fmt = [] if args.text else ["--format", "json"]
    n = args.workers
    variants = {"seed": (args.cli, [*fmt, str(EXAMPLE)]),
                "-j 1": (args.cli, [*fmt, "-j", "1", *map(str, dirs)]),
                f"-j {n}": (args.cli, [*fmt, "-j", str(n), *map(str, dirs)])}
    if args.baseline_cli:
        variants[f"-j {n} baseline"] = (args.baseline_cli, [*fmt, "-j", str(n), *map(str, dirs)])
    print(f"{len(dirs)} jobs ({', '.join(f'{s:g}' for s in sizes)} MiB, {args.log} log), {os.cpu_count()} cores, "
          f"{args.rounds} interleaved rounds, {'text' if args.text else 'json'} output; "
          f"load average {os.getloadavg()[0]:.1f}")
    run(args.cli, variants["seed"][1])  # fill the caches (compiled corpus, bytecode)
    walls: dict[str, list[float]] = {k: [] for k in variants}
    cpus: dict[str, list[float]] = {k: [] for k in variants}
    outs: dict[str, set[bytes]] = {k: set() for k in variants}
    for _ in range(args.rounds):
        for name, (cli, a) in variants.items():
            r = run(cli, a)
            walls[name].append(r["wall"])
            cpus[name].append(r["cpu"])
            outs[name].add(r["out"])
    for name in variants:
        print(f"  {name:<16} wall best {min(walls[name]):6.2f} s  median {statistics.median(walls[name]):6.2f} s   "
              f"CPU best {min(cpus[name]):6.2f} s  median {statistics.median(cpus[name]):6.2f} s")
    s, t1, tn = min(walls["seed"]), min(walls["-j 1"]), min(walls[f"-j {n}"])
    bound = t1 / (s + max(0.0, t1 - s) / n)
    print(f"  speed-up -j {n} vs -j 1 (best wall): {t1 / tn:.2f}x   (median {statistics.median(walls['-j 1']) / statistics.median(walls[f'-j {n}']):.2f}x)")
    print(f"  serial floor S = {s:.2f} s (seed example alone): the bound for -j {n} is {bound:.2f}x")
    print(f"  CPU -j {n} / -j 1: {min(cpus[f'-j {n}']) / min(cpus['-j 1']):.2f}")
    if args.baseline_cli:
        tb = min(walls[f"-j {n} baseline"])
        print(f"  baseline -j {n}: {t1 / tb:.2f}x vs -j 1; this CLI's -j {n} is {tb / tn:.2f}x faster than the baseline's "
              f"(CPU {min(cpus[f'-j {n} baseline']):.2f} s -> {min(cpus[f'-j {n}']):.2f} s)")
    ours = set().union(outs["-j 1"], outs[f"-j {n}"])
    same = len(ours) == 1
    print(f"  results identical (every -j 1 and -j {n} run, byte for byte): {same}"
          + (f"; the baseline's too: {outs[f'-j {n} baseline'] == ours}" if args.baseline_cli else "")
          + f"; load average at the end {os.getloadavg()[0]:.1f}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
