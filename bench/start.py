"""Warm start of `rulekit attribute` on the seed example, the way a user runs it.

    .venv/bin/python bench/start.py [--runs 5] [--old /path/to/other/venv/bin/rulekit] [--format json]

Runs the installed console script (this venv's `rulekit`, and `--old` if given,
alternating in the same run) with a user's settings: no RULEKIT_* variables,
bytecode caching on (PYTHONDONTWRITEBYTECODE removed), the corpus cache in the
default folder (~/.cache/rulekit).  One unmeasured run first fills the caches.
Prints best-of-N and median wall and CPU seconds (user + sys, from os.wait4) per CLI, the
load average, and checks both CLIs print the same bytes.  Bounded: 2 × (N + 1)
runs of a ~0.5 s command.

`--breakdown` also prints where one warm run spends its time: the CPU seconds of
each phase measured in one process (imports included where they happen).
`--imports N` also lists the N modules whose own import (`python -X importtime`,
self time, one warm run) costs most: what is left to cut.
`--instructions` also counts the instructions one warm run executes (valgrind
cachegrind, `I refs`; ~15 s a run): unlike seconds, the count does not depend
on what else the machine is doing, so the ratio holds on a shared machine.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "xid149-nvlink"
RULEKIT = Path(sys.executable).with_name("rulekit")

_PHASES = r'''
import io, json, sys, time
P, W = time.process_time, time.perf_counter
marks = [("start", P(), W())]
def mark(name): marks.append((name, P(), W()))
import rulekit.cli
mark("import rulekit.cli (typer, the app)")
from rulekit.cli.app import load_commands
load_commands(["attribute"])
mark("import the attribute command")
from rulekit.cli._common import load_engine_or_exit
res = load_engine_or_exit(None)
mark("corpus load (cache hit)")
from rulekit.inputs.jobdir import read_job_dir
jd = read_job_dir(sys.argv[1])
mark("job read")
from rulekit.engine.session import Session
with Session(res.engine, jd.job) as s:
    mark("session open (scheduler lines)")
    s.ingest_batch(jd.observations, None)
    s.ingest_metrics(jd.metrics)
    mark("ingest: scan and extract")
    r = s.attribute(with_trace=False)
mark("attribute")
out = json.dumps(r, indent=2, default=str)
mark("render json")
import contextlib
from rulekit.cli.attribute import render_text, text_console
with contextlib.redirect_stdout(io.StringIO()):  # not a terminal: what `rulekit attribute > file` does
    render_text(text_console(), r)
mark("render text (off a terminal)")
for (_, p0, _w0), (name, p1, _w1) in zip(marks, marks[1:]):
    print(f"  {name:<38} {p1 - p0:6.3f} s CPU")
print(f"  {'total (after interpreter start)':<38} {marks[-1][1] - marks[0][1]:6.3f} s CPU")
'''


def user_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RULEKIT_") and k != "PYTHONDONTWRITEBYTECODE"}


def run(cli: Path, fmt: str) -> tuple[float, float, bytes]:
    t = time.perf_counter()
    p = subprocess.Popen([str(cli), "attribute", "--format", fmt, str(EXAMPLE)], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=user_env(), cwd=ROOT)
    out = p.stdout.read() if p.stdout else b""
    _pid, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cli} attribute failed with status {os.waitstatus_to_exitcode(status)}")
    return wall, ru.ru_utime + ru.ru_stime, out


def instructions(cli: Path, fmt: str) -> int | None:
    """Instructions executed by one run of `cli` (valgrind's cachegrind), None without valgrind."""
    import re
    import shutil

    vg = shutil.which("valgrind")
    if vg is None:
        return None
    python = cli.with_name("python")  # the console script's interpreter: valgrind cannot follow a #! line
    p = subprocess.run([vg, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", str(python),
                        str(cli), "attribute", "--format", fmt, str(EXAMPLE)], capture_output=True, text=True,
                       env=user_env(), cwd=ROOT, timeout=600)
    m = re.search(r"I\s+refs:\s+([\d,]+)", p.stderr)
    return int(m.group(1).replace(",", "")) if m else None


def heaviest_imports(fmt: str, n: int) -> list[tuple[int, str]]:
    """The `n` modules with the largest own import time (µs) in one warm run of this CLI."""
    code = ("import sys; sys.argv = ['rulekit', 'attribute', '--format', %r, %r]\n"
            "from rulekit.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n" % (fmt, str(EXAMPLE)))
    p = subprocess.run([str(RULEKIT.with_name("python")), "-X", "importtime", "-c", code], capture_output=True,
                       text=True, env=user_env(), cwd=ROOT, timeout=600)
    rows = []
    for line in p.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[0].startswith("import time:") and parts[1].strip().isdigit():
            rows.append((int(parts[0].split(":")[1]), parts[2].strip()))
    return sorted(rows, reverse=True)[:n]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--old", type=Path, help="another rulekit console script to time alternately (a baseline)")
    ap.add_argument("--format", default="json", choices=("json", "text"))
    ap.add_argument("--breakdown", action="store_true", help="also print the per-phase CPU of one warm run")
    ap.add_argument("--instructions", action="store_true", help="also count one warm run's instructions (valgrind)")
    ap.add_argument("--imports", type=int, default=0, metavar="N",
                    help="also list the N modules whose own import costs most (-X importtime, one warm run)")
    args = ap.parse_args(argv)
    clis = {"this": RULEKIT}
    if args.old:
        clis["old"] = args.old
    for name, cli in clis.items():
        if not cli.exists():
            print(f"no rulekit console script at {cli}")
            return 2
        run(cli, args.format)  # fills the corpus and scanner caches, writes the bytecode
    print(f"warm start: rulekit attribute --format {args.format} {EXAMPLE.relative_to(ROOT)}; "
          f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    walls: dict[str, list[float]] = {n: [] for n in clis}
    cpus: dict[str, list[float]] = {n: [] for n in clis}
    outs: dict[str, bytes] = {}
    for _ in range(args.runs):
        for name, cli in clis.items():
            w, c, out = run(cli, args.format)
            walls[name].append(w)
            cpus[name].append(c)
            outs[name] = out
    for name, cli in clis.items():
        print(f"{name:>5} {cli}: best of {args.runs} {min(walls[name]):.3f} s wall, {min(cpus[name]):.3f} s CPU; "
              f"median {statistics.median(walls[name]):.3f} s wall, {statistics.median(cpus[name]):.3f} s CPU "
              f"(wall {', '.join(f'{w:.2f}' for w in walls[name])})")
    if "old" in clis:
        print(f"ratio old/this: best {min(walls['old']) / min(walls['this']):.2f}x wall, "
              f"{min(cpus['old']) / min(cpus['this']):.2f}x CPU; median "
              f"{statistics.median(walls['old']) / statistics.median(walls['this']):.2f}x wall, "
              f"{statistics.median(cpus['old']) / statistics.median(cpus['this']):.2f}x CPU; "
              f"same output: {outs['old'] == outs['this']}")
    if args.instructions:
        counts = {name: instructions(cli, args.format) for name, cli in clis.items()}
        for name, n in counts.items():
            print(f"{name:>5}: {n / 1e6:,.0f} M instructions" if n else f"{name:>5}: no count (valgrind missing?)")
        if "old" in counts and counts["old"] and counts["this"]:
            print(f"ratio old/this: {counts['old'] / counts['this']:.2f}x instructions")
    if args.breakdown:
        print("breakdown of one warm run (this CLI's Python, one process):")
        sys.stdout.flush()
        subprocess.run([str(RULEKIT.with_name("python")), "-c", _PHASES, str(EXAMPLE)], env=user_env(), cwd=ROOT,
                       check=True)
    if args.imports:
        print("heaviest own imports of one warm run (-X importtime self time, which inflates each a little):")
        for us, mod in heaviest_imports(args.format, args.imports):
            print(f"  {us / 1000:6.1f} ms  {mod}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (wall times are only comparable on an idle machine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
