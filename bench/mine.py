"""`rulekit mine` at fleet scale: lines per second and peak memory.

Writes JOBS job directories under bench/.data/mine/ (kept between runs with the same
parameters): each node's training log has LINES lines, mostly INFO progress lines, a
share of error lines a bundled rule explains (CUDA out of memory, NCCL watchdog) and a
share of error lines no rule knows, drawn from TEMPLATES message shapes with variable
numbers, hex, PCI addresses and node names; each node's syslog a few unknown kernel
errors.  Then times, each stage in its own process (wall, CPU of the process, peak RSS
from getrusage):
- `extract`: the unexplained lines of every job (the engine's extraction with the
  generic fallback), lines of log read per second;
- `cluster`: Drain over the unexplained lines alone (`Miner.add`; the lines repeated to
  200,000), lines per second;
- `mine`: both (what `rulekit mine JOB_DIR...` does, without printing);
and checks that the ranked templates hold every planted unknown shape (the per-template
word of a shape is one varying token: Drain reads it as a variable of the shape).  The machine
may be shared: compare the ratios of one run.  CPU is the process's and its scan workers'.
Usage: python bench/mine.py [--jobs 40] [--nodes 4] [--lines 20000] [--templates 30]
"""
from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SHAPES = ["{lvl} frobnicator{k} lost quorum on shard {n} after {m} retries",
          "{lvl} widget{k} 0000:{b:02x}:00.0: sensor bank {n} read failed with error 0x{h:x}",
          "{lvl} storage{k}: write to /data/ckpt/step_{n}.pt failed: checksum mismatch at offset {m}",
          "{lvl} planner{k}: no valid schedule for stage {n} of {m} (node {node})",
          "{lvl} dispatcher{k} on {node} stopped unexpectedly with status {n}"]
EXPLAINED = ["[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.22 GiB. GPU {g} has a "
             "total capacity of 79.10 GiB of which 612.00 MiB is free."]


def _tag(k: int) -> str:
    """A letters-only name suffix (a token with digits is a variable to Drain)."""
    return chr(97 + k % 26) + chr(97 + k // 26)


def generate(out: Path, jobs: int, nodes: int, lines: int, templates: int, seed: int = 7) -> int:
    rnd = random.Random(seed)
    total = 0
    for j in range(jobs):
        d = out / f"job-{j:04d}"
        (d / "applog").mkdir(parents=True, exist_ok=True)
        (d / "syslog").mkdir(exist_ok=True)
        names = [f"node{j * nodes + i:05d}" for i in range(nodes)]
        (d / "job.toml").write_text(f'[job]\nid = "job-{j:04d}"\nstate = "FAILED"\nnodes = {json.dumps(names)}\n'
                                    "tasks_per_node = 8\n")
        for i, node in enumerate(names):
            buf = []
            for k in range(lines):
                ts = f"2026-06-01T03:{(k // 60) % 60:02d}:{k % 60:02d}"
                x = rnd.random()
                if x < 0.004:
                    t = rnd.randrange(templates)
                    buf.append(f"{ts} " + SHAPES[t % len(SHAPES)].format(
                        lvl="ERROR", k=_tag(t), n=rnd.randrange(1000), m=rnd.randrange(100), b=rnd.randrange(256),
                        h=rnd.randrange(1 << 16), node=rnd.choice(names)))
                elif x < 0.005:
                    buf.append(EXPLAINED[0].format(r=rnd.randrange(8), g=rnd.randrange(8)))
                else:
                    buf.append(f"{ts} INFO step {k} loss {rnd.random():.4f} lr 3e-4 tokens/s {rnd.randrange(10**6)}")
            (d / "applog" / f"{node}.log").write_text("\n".join(buf) + "\n")
            sl = [f"Jun  1 03:10:{s:02d} {node} kernel: widgetd 0000:3b:00.0: bank {s} read failed with error 0x1f"
                  for s in range(5)]
            (d / "syslog" / f"{node}.log").write_text("\n".join(sl) + "\n")
            total += len(buf) + len(sl)
    return total


STAGE = r"""
import json, resource, sys, time
from pathlib import Path
from rulekit.rules.loader import load_corpus
from rulekit.analysis.mine import Miner, unexplained_in_job
stage, root = sys.argv[1], Path(sys.argv[2])
engine = load_corpus(None).engine
dirs = sorted(p for p in root.iterdir() if p.is_dir())
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
def _cpu():
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ch.ru_utime + ch.ru_stime  # scan workers included
t0, c0 = time.perf_counter(), _cpu()
if stage == "cluster":
    recs = [u for d in dirs for u in unexplained_in_job(engine, d)]
    recs = (recs * (200000 // max(len(recs), 1) + 1))[:200000]  # the clustering alone, at 200k lines
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0, c0 = time.perf_counter(), _cpu()
    m = Miner()
    for u in recs:
        m.add(u)
    n = len(recs)
elif stage == "extract":
    n = sum(len(unexplained_in_job(engine, d)) for d in dirs)
else:
    m = Miner()
    n = 0
    for d in dirs:
        for u in unexplained_in_job(engine, d):
            m.add(u)
            n += 1
wall, cpu = time.perf_counter() - t0, _cpu() - c0
out = {"stage": stage, "wall": wall, "cpu": cpu, "unexplained": n,
       "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "base_mb": base / 1024}
if stage != "extract":
    out["templates"] = [t.template for t in m.templates()]
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--lines", type=int, default=20000)
    ap.add_argument("--templates", type=int, default=30)
    a = ap.parse_args()
    data = ROOT / ".data" / "mine" / f"j{a.jobs}-n{a.nodes}-l{a.lines}-t{a.templates}"
    stamp = data / ".lines"
    if not stamp.exists():
        total = generate(data, a.jobs, a.nodes, a.lines, a.templates)
        stamp.write_text(str(total))
    total = int(stamp.read_text())
    print(f"{a.jobs} jobs x {a.nodes} nodes, {total} log lines ({data})")
    print(f"{'stage':<8} {'wall s':>8} {'cpu s':>8} {'lines/s (cpu)':>14} {'unexplained':>12} {'peak MB':>8} "
          f"{'+MB':>6}")
    subprocess.run([sys.executable, "-c", STAGE, "extract", str(data)], capture_output=True)  # warm caches
    for stage in ("extract", "cluster", "mine"):
        p = subprocess.run([sys.executable, "-c", STAGE, stage, str(data)], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(p.stderr)
        r = json.loads(p.stdout)
        n = r["unexplained"] if stage == "cluster" else total
        print(f"{stage:<8} {r['wall']:>8.2f} {r['cpu']:>8.2f} {n / max(r['cpu'], 1e-9):>14,.0f} "
              f"{r['unexplained']:>12} {r['peak_mb']:>8.0f} {r['peak_mb'] - r['base_mb']:>6.0f}")
        if stage == "mine":
            ts = r["templates"]
            # a shape's per-template word differs in one token: Drain rightly reads it as a variable
            words = ["lost quorum", "sensor bank", "checksum mismatch", "no valid schedule", "stopped unexpectedly",
                     "widgetd"]
            missing = [w for w in words if not any(w in t for t in ts)]
            print(f"{len(ts)} templates (planted: {len(words)} shapes); not found: {missing or 'none'}")
    print(f"(ru_maxrss; the machine may be shared: {time.strftime('%H:%M:%S')})")
    _ = resource


if __name__ == "__main__":
    main()
