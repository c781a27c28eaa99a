"""The commands a rule repository's CI runs, on a copy of the bundled rules, the way a user runs them.

    .venv/bin/python bench/toolkit_ci.py [--runs 5] [--old /path/to/other/venv/bin/rulekit]
                                         [--commands test,check,lint]

The rule repository is a copy of `bundled_rules/` and `examples/` in a temporary
folder, so that each CLI reads it as a user's rules (neither as its own package's),
and both read the same files.  Runs the installed console script (this venv's
`rulekit`, and `--old` if given, alternating in the same run) with a user's settings: no RULEKIT_* variables,
bytecode caching on, the corpus cache in the default folder.  One unmeasured run
of each command first fills the caches.  Prints, per command, best and median wall
and CPU seconds (user + sys, from os.wait4) and, with `--old`, the ratio of the
medians (old / this: above 1 is faster here), and checks both CLIs print the same
bytes (`test` and `check` as JSON; `lint` as text).  Bounded: commands x 2 x (N + 1)
runs of 1-5 s each.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULEKIT = Path(sys.executable).with_name("rulekit")
ARGS = {  # (run in the repository's folder)
    "test": ["test", "--format", "json", "bundled_rules"],
    "check": ["check", "--format", "json", "bundled_rules"],
    "lint": ["lint", "bundled_rules"],
}


def user_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RULEKIT_") and k != "PYTHONDONTWRITEBYTECODE"}


def run(cli: Path, command: str, repo: Path) -> tuple[float, float, bytes]:
    t = time.perf_counter()
    p = subprocess.Popen([str(cli), *ARGS[command]], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         env=user_env(), cwd=repo)
    out = p.stdout.read() if p.stdout else b""
    _pid, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):  # (1: findings, which lint may report on the bundled rules)
        raise SystemExit(f"{cli} {command} failed with status {code}")
    return wall, ru.ru_utime + ru.ru_stime, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--old", type=Path, help="another rulekit console script, timed alternately")
    ap.add_argument("--commands", default="test,check,lint")
    args = ap.parse_args(argv)
    clis = {"this": RULEKIT, **({"old": args.old} if args.old else {})}
    commands = [c for c in args.commands.split(",") if c]
    for c in commands:
        if c not in ARGS:
            raise SystemExit(f"unknown command {c!r}: one of {', '.join(ARGS)}")
    with tempfile.TemporaryDirectory(prefix="rulekit-ci-bench-") as tmp:
        repo = Path(tmp)
        shutil.copytree(ROOT / "bundled_rules", repo / "bundled_rules",
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(ROOT / "examples", repo / "examples")
        print(f"rule repository CI commands on a copy of bundled_rules/ and examples/ ({repo}); "
              f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
        for command in commands:
            bench_command(command, clis, repo, args)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (wall times are only comparable on an idle machine)")
    return 0


def bench_command(command: str, clis: dict[str, Path], repo: Path, args: argparse.Namespace) -> None:
    outs = {name: run(cli, command, repo)[2] for name, cli in clis.items()}  # fills the caches
    walls: dict[str, list[float]] = {n: [] for n in clis}
    cpus: dict[str, list[float]] = {n: [] for n in clis}
    for _ in range(args.runs):
        for name, cli in clis.items():
            w, c, out = run(cli, command, repo)
            walls[name].append(w)
            cpus[name].append(c)
            outs[name] = out
    print(f"rulekit {' '.join(ARGS[command])}:")
    for name in clis:
        print(f"  {name:4s} {clis[name]}: best {min(walls[name]):.2f} s, median {statistics.median(walls[name]):.2f} s "
              f"wall; median {statistics.median(cpus[name]):.2f} s CPU "
              f"(wall {', '.join(f'{x:.2f}' for x in walls[name])})")
    if args.old:
        ratio = statistics.median(walls["old"]) / statistics.median(walls["this"])
        print(f"  old / this, medians: {ratio:.2f}x; same output: {outs['old'] == outs['this']}")


if __name__ == "__main__":
    sys.exit(main())
