"""End to end against ripgrep: what a user runs, `rulekit attribute JOB_DIR`, against
`rg --no-unicode -c -f <the corpus's own extractor regexes>` on the same log.

    .venv/bin/python bench/attribute_vs_rg.py [--size-mb 32] [--rates realistic,0,0.1,1,5,20]
        [--rss-sizes 16,64,256] [--many 6] [--many-size-mb 35] [--chunk-sizes 16,64,256] [--skip rss,many,chunks]
        [--pin]

Every figure comes from one run on this machine; ratios compare runs made side by
side in that run (rg time / rulekit time: 1.0 means rulekit keeps rg's pace).

1. *Evidence rates.*  For each rate (`--repeat N`: N runs of each, alternating,
   the medians shown and each run's ratio beside them) a job directory (a copy of
   examples/xid149-nvlink) whose application log is SIZE MiB of rank-prefixed
   benign training lines (bench/corpus.py) with that fraction of *evidence
   lines* mixed in: the positive inline-test lines of the bundled extractors that
   apply to application logs.  At the numbered rates the benign lines that some
   extractor matches are dropped first, so "0" really has no evidence;
   "realistic" keeps them (NCCL OOB lines, ~0.3 %) and mixes in 1.5 % evidence
   lines, the ~1.8 % of a failing training job's log.  The example's own log
   follows the noise.  Timed: the installed `rulekit attribute --format json`
   (default settings: no RULEKIT_* variables, bytecode caching on as after a
   pip install) and rg over the application log, one after the other on the
   machine's cores as a user runs them (the issue's "side by side on 2 cores":
   rulekit may scan a large log in worker processes, rg searches one file on one
   thread): wall seconds, the ratio a user waits, and CPU seconds (user + sys,
   every process), the ratio on one core.  `--pin` puts both on core 0 instead
   (then the two ratios agree and the chunk-parallel scan takes no part).
2. *Warm start* on examples/xid149-nvlink: one run to fill caches, then best
   wall time of 5.
3. *Peak RSS* of `rulekit attribute` at several log sizes (the realistic log).
4. *Many jobs*: `-j 2` against `-j 1` on --many job directories (default 6 of
   35 MiB, the jobs the issue measured), interleaved rounds (--repeat N, at
   least 2): the best and the median of each, and each round's ratio; then
   Amdahl's bound from -j 1's medians with one job and with all of them (the
   fixed part every process pays, start-up and first-job costs, against the
   per-job time: `print_many_bound`).
   `--many-instructions` also runs both under valgrind (cachegrind) and prints
   -j 1's instructions over those on -j 2's critical path (its busiest worker's,
   which valgrind counts from this process's start): what the ratio would be if
   each instruction took the same time, which the machine's load does not move
   (page faults, caches and the kernel's work are not in it).
5. *Chunk-parallel scan* of one log (realistic, --chunk-sizes MiB): unpinned,
   the default (workers when the log is large enough and cores are free)
   against `RULEKIT_SCAN_WORKERS=0` (serial), best of 2 interleaved rounds,
   wall and CPU (workers included): where the wall-time gain starts is the
   threshold `rulekit.extract.parallel.PARALLEL_MIN_BYTES` should have; 2W
   forces two workers at every size.

Job directories are built once and cached under bench/.data/ (git-ignored); a
log larger than 256 MiB repeats its first 256 MiB (same evidence mix; faster).
Bounded: the defaults finish in a few minutes; larger sizes by flag.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from statistics import median

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from corpus import benign_line  # noqa: E402
from extraction import ensure_rg, translate  # noqa: E402

MiB = 1 << 20
EXAMPLE = ROOT / "examples" / "xid149-nvlink"
RULEKIT = Path(sys.executable).with_name("rulekit")  # --cli overrides (e.g. another checkout's venv)
DATA = HERE / ".data" / "vs_rg"
REALISTIC_INJECT = 0.015
GENERATE_MAX = 256 * MiB  # beyond this a log repeats its first 256 MiB


# ---- material ----------------------------------------------------------------------------

def corpus_material() -> tuple[list[str], list[str], object]:
    """(extractor patterns, evidence lines for application logs, applog scanner)."""
    from rulekit.rules.corpus import applies
    from rulekit.rules.loader import load_corpus

    engine = load_corpus(None).engine
    assert engine is not None, "the bundled corpus does not load"
    patterns = [r.match_re for r in engine.extractors] + [r.match_re for r in engine.accumulators]
    evidence = []
    for r in engine.extractors:
        if not applies(r, "applog", "text"):
            continue
        for t in r.tests:
            if t.expect != "nothing" and t.source in (None, "applog") and "\n" not in t.line:
                evidence.append(t.line)
    return patterns, sorted(set(evidence)), engine.scan_plan("applog", "text").scanner


def write_log(path: Path, size: int, rate: float, keep_natural: bool, evidence: list[str], scanner,
              seed: int) -> None:
    rng = random.Random(seed)
    tmp = path.with_suffix(".tmp")
    written = 0
    fresh = min(size, GENERATE_MAX)
    with open(tmp, "wb") as out:
        while written < fresh:
            block = [f"{rng.randrange(32)}: {benign_line(rng)}" for _ in range(5000)]
            if not keep_natural:  # drop the benign lines some extractor matches
                data = ("\n".join(block) + "\n").encode()
                hit = {s for s, _e, _i, _g in scanner.scan(data)}
                offs, pos = [], 0
                for line in block:
                    offs.append(pos)
                    pos += len(line.encode()) + 1
                block = [line for line, o in zip(block, offs) if o not in hit]
            lines = [f"{rng.randrange(32)}: {rng.choice(evidence)}" if rng.random() < rate else b
                     for b in block]
            data = ("\n".join(lines) + "\n").encode()
            out.write(data)
            written += len(data)
    written = tmp.stat().st_size
    if written < size:  # larger logs repeat the generated part (generating is slower than attributing)
        block = tmp.read_bytes()
        with open(tmp, "ab") as out:
            while written < size:
                part = block[: size - written]
                part = part[: part.rfind(b"\n") + 1] or block
                out.write(part)
                written += len(part)
    with open(tmp, "ab") as out:
        out.write((EXAMPLE / "applog" / "train.log").read_bytes())
    tmp.replace(path)


def build_job(name: str, size_mb: float, rate_pct: float, keep_natural: bool, material, seed: int = 7) -> Path:
    dest = DATA / name
    if (dest / ".complete").exists():
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(EXAMPLE, dest)
    _patterns, evidence, scanner = material
    write_log(dest / "applog" / "train.log", int(size_mb * MiB), rate_pct / 100, keep_natural, evidence, scanner, seed)
    (dest / ".complete").write_text("ok\n")
    return dest


# ---- running -----------------------------------------------------------------------------

def run_ru(cmd: list[str], pin: bool = True, extra_env: dict | None = None) -> dict:
    """Run a command: wall and CPU seconds (its waited-for children included) and peak RSS (os.wait4)."""
    if pin and shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    # a user's settings: no RULEKIT_* variables, and bytecode caching on (as after a pip install)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULEKIT_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(extra_env or {})
    # Peak RSS through GNU time: a child forked from this (large) process would report
    # this process's high-water mark as its own (Linux keeps it across exec).
    timing = DATA / f".time-{os.getpid()}"  # per benchmark process: two may run at once
    if shutil.which("time") or Path("/usr/bin/time").exists():
        cmd = ["/usr/bin/time", "-f", "%M %U %S", "-o", str(timing), *cmd]
    out_f = open(DATA / f".stdout-{os.getpid()}", "wb+")
    err_f = open(DATA / f".stderr-{os.getpid()}", "wb+")
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, env=env)
    _pid, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    out_f.seek(0)
    err_f.seek(0)
    out, err = out_f.read().decode("utf-8", "replace"), err_f.read().decode("utf-8", "replace")
    out_f.close()
    err_f.close()
    cpu, rss = ru.ru_utime + ru.ru_stime, -1
    if cmd[0] == "/usr/bin/time":
        fields = timing.read_text().split()[-3:]  # "Command exited with non-zero status" may precede
        rss, cpu = int(fields[0]) * 1024, float(fields[1]) + float(fields[2])
    # CPU includes the waited-for children (pool workers); RSS is the measured process's own
    return {"wall": dt, "cpu": cpu, "rss": rss, "rc": p.returncode, "out": out, "err": err}


def rulekit(*args: str, pin: bool = True, extra_env: dict | None = None) -> dict:
    r = run_ru([str(RULEKIT), "attribute", "--format", "json", *args], pin=pin, extra_env=extra_env)
    if r["rc"] != 0:
        raise SystemExit(f"rulekit attribute failed ({r['rc']}): {r['err'][-1500:]}")
    return r


def one_result(stdout: str) -> dict:
    """The one result of a `--format json` run (a list of one; an older rulekit printed the object)."""
    got = json.loads(stdout)
    return got[0] if isinstance(got, list) else got


def summary(stdout: str) -> str:
    res = one_result(stdout)
    rc = res.get("root_cause") or {}
    return f"{res['outcome']}/{rc.get('symptom')}@{rc.get('node')}, {len(res.get('evidence', []))}+{res.get('evidence_omitted', 0)} evidence"


# ---- sections ----------------------------------------------------------------------------

def section_rates(args, material, rg: str, pat_file: Path, report: dict) -> None:
    where = "both pinned to core 0" if args.pin else f"both on the machine's {os.cpu_count()} cores"
    print(f"\n== end to end vs rg: {args.size_mb} MiB application log, {len(material[0])} extractor regexes, "
          f"{where} ==")
    print(f"{'evidence':>10} {'lines':>9} {'ev. lines':>9} {'rulekit cpu':>11} {'rg cpu':>7} {'x rg cpu':>8} "
          f"{'rulekit wall':>12} {'rg wall':>8} {'x rg wall':>9} {'RSS':>8}  result")
    for rate in args.rates.split(","):
        realistic = rate == "realistic"
        pct = REALISTIC_INJECT * 100 if realistic else float(rate)
        job = build_job(f"{'realistic' if realistic else 'rate' + rate}-{args.size_mb}MiB", args.size_mb, pct,
                        realistic, material)
        log = job / "applog" / "train.log"
        rks, gs = [], []
        for _ in range(args.repeat):  # alternately: a slow spell of the machine hits both
            rks.append(rulekit(str(job), pin=args.pin))
            gs.append(run_ru([rg, "--no-unicode", "-c", "-f", str(pat_file), str(log)], pin=args.pin))
            if gs[-1]["rc"] not in (0, 1):
                raise SystemExit(f"rg failed: {gs[-1]['err'][:300]}")
        if len({summary(r["out"]) for r in rks}) != 1:
            raise SystemExit(f"rulekit gave different results on one log: {sorted({summary(r['out']) for r in rks})}")
        rk = {"wall": median([r["wall"] for r in rks]), "cpu": median([r["cpu"] for r in rks]),
              "rss": max(r["rss"] for r in rks), "out": rks[0]["out"]}
        g = {"wall": median([r["wall"] for r in gs]), "cpu": median([r["cpu"] for r in gs]), "out": gs[0]["out"]}
        pairs = sorted(b["wall"] / a["wall"] for a, b in zip(rks, gs))  # each run's ratio, rg's beside it
        with open(log, "rb") as f:
            nlines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
        hits = int(g["out"].strip() or 0)
        row = {"rate": rate, "lines": nlines, "evidence_lines": hits, "rulekit_cpu": rk["cpu"], "rg_cpu": g["cpu"],
               "rulekit_wall": rk["wall"], "rg_wall": g["wall"], "rulekit_rss": rk["rss"],
               "x_rg_cpu": g["cpu"] / rk["cpu"], "x_rg_wall": g["wall"] / rk["wall"], "runs": args.repeat,
               "x_rg_wall_pairs": pairs}
        report.setdefault("rates", []).append(row)
        label = f"{rate}{'' if realistic else ' %'}"
        print(f"{label:>10} {nlines:>9} {100 * hits / nlines:>8.2f}% {rk['cpu']:>10.2f}s {g['cpu']:>6.2f}s "
              f"{row['x_rg_cpu']:>7.3f}x {rk['wall']:>11.2f}s {g['wall']:>7.2f}s {row['x_rg_wall']:>8.3f}x "
              f"{rk['rss'] / MiB:>5.0f}MiB  "
              f"{summary(rk['out'])}", flush=True)
        if args.repeat > 1:
            print(f"{'':>10} (medians of {args.repeat} alternating runs; each run's wall ratio: "
                  f"{', '.join(f'{x:.3f}' for x in pairs)})", flush=True)


def section_warm(args, report: dict) -> None:
    print("\n== warm start: rulekit attribute examples/xid149-nvlink ==")
    rulekit(str(EXAMPLE), pin=False)  # fills the caches
    walls = [rulekit(str(EXAMPLE), pin=False)["wall"] for _ in range(5)]
    report["warm_start"] = {"best": min(walls), "all": walls}
    print(f"best of 5: {min(walls):.3f} s wall (all: {', '.join(f'{w:.2f}' for w in walls)})")


def section_rss(args, material, report: dict) -> None:
    print("\n== peak RSS by log size (realistic log) ==")
    for size in [float(s) for s in args.rss_sizes.split(",")]:
        job = build_job(f"realistic-{size:g}MiB", size, REALISTIC_INJECT * 100, True, material)
        r = rulekit(str(job), pin=args.pin)
        actual = (job / "applog" / "train.log").stat().st_size / MiB
        res = one_result(r["out"])
        report.setdefault("rss", []).append({"size_mb": actual, "rss": r["rss"], "wall": r["wall"], "cpu": r["cpu"]})
        print(f"{actual:>8.0f} MiB log: peak RSS {r['rss'] / MiB:6.0f} MiB, {r['wall']:.2f} s wall, "
              f"{r['cpu']:.2f} s CPU, evidence omitted {res.get('evidence_omitted', 0)}", flush=True)


def section_many(args, material, report: dict) -> None:
    print(f"\n== -j 2 vs -j 1 on {args.many} jobs of {args.many_size_mb} MiB (realistic) ==")
    base = build_job(f"realistic-{args.many_size_mb}MiB", args.many_size_mb, REALISTIC_INJECT * 100, True, material)
    dirs = []
    for k in range(args.many):
        d = DATA / f"many-{args.many_size_mb}MiB-{k}"
        if not d.exists():
            shutil.copytree(base, d, copy_function=lambda s, t_: Path(t_).hardlink_to(s))
        dirs.append(str(d))
    rounds = max(2, args.repeat)
    walls: dict[int, list[float]] = {1: [], 2: []}
    alone: list[float] = []  # -j 1 on the first job only: the start-up and one job
    outs: dict[int, str] = {}
    for _round in range(rounds):  # interleaved: a slow spell of the machine hits both
        for j in (1, 2):
            r = rulekit("-j", str(j), *dirs, pin=False)
            walls[j].append(r["wall"])
            outs[j] = r["out"]
            print(f"-j {j}: {r['wall']:.2f} s wall, CPU {r['cpu']:.1f} s", flush=True)
        alone.append(rulekit("-j", "1", dirs[0], pin=False)["wall"])
    same = json.loads(outs[1]) == json.loads(outs[2])
    best = {j: min(w) for j, w in walls.items()}
    med = {j: median(w) for j, w in walls.items()}
    pairs = sorted(a / b for a, b in zip(walls[1], walls[2]))
    report["many"] = {"j1": best[1], "j2": best[2], "speedup": best[1] / best[2], "identical": same,
                      "rounds": rounds, "median_j1": med[1], "median_j2": med[2], "median_speedup": med[1] / med[2],
                      "round_speedups": pairs}
    print(f"speed-up -j 2 vs -j 1 (best of {rounds}): {best[1] / best[2]:.2f}x; medians: {med[1] / med[2]:.2f}x; "
          f"each round: {', '.join(f'{x:.2f}' for x in pairs)}; results identical: {same}")
    print_many_bound(len(dirs), med[1], median(alone), report)
    if args.many_instructions:
        section_many_instructions(args, dirs, report)


def print_many_bound(n: int, all_jobs: float, one_job: float, report: dict) -> None:
    """Amdahl's bound for -j 2 from -j 1's own medians: a later job takes J = (all n jobs -
    one job) / (n - 1); the rest of the one-job run, F = one job - J (the start-up and
    what a process's first job costs more: cold regex and lazy state), is paid before
    and beside the work by every process that attributes, so the best 2 workers can do
    is F + ceil(n / 2) J, and no better however the jobs are shared out."""
    if n < 2:
        return
    per_job = (all_jobs - one_job) / (n - 1)
    fixed = one_job - per_job
    bound = all_jobs / (fixed + -(-n // 2) * per_job)
    report["many"].update({"median_one_job": one_job, "per_job": per_job, "fixed": fixed, "bound": bound})
    print(f"-j 1 medians: one job {one_job:.2f} s, all {n} {all_jobs:.2f} s: a later job {per_job:.3f} s, "
          f"the fixed part (start-up, first-job costs) {fixed:.3f} s; the most -j 2 can gain over -j 1 "
          f"with that fixed part (Amdahl): {bound:.2f}x")


def section_many_instructions(args, dirs: list[str], report: dict) -> None:
    """-j 1 and -j 2 under valgrind (cachegrind, instruction counts), a figure the
    machine's load does not move.  A forked worker's count includes everything this
    process ran before forking it (the counters are copied with the process), so the
    busiest worker's count is -j 2's critical path but for this process's work after
    the fork (taking and printing the results: a few per cent of its own count)."""
    vg = shutil.which("valgrind")
    if vg is None:
        print("(--many-instructions: valgrind is not installed)")
        return
    python = RULEKIT.with_name("python")  # valgrind cannot follow the console script's #! line
    env = {k: v for k, v in os.environ.items() if not k.startswith("RULEKIT_") and k != "PYTHONDONTWRITEBYTECODE"}
    counts: dict[int, dict] = {}
    for j in (1, 2):
        p = subprocess.Popen([vg, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                              str(python), str(RULEKIT), "attribute", "--format", "json", "-j", str(j), *dirs],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        _out, err = p.communicate(timeout=3600)
        if p.returncode != 0:
            raise SystemExit(f"rulekit attribute -j {j} under valgrind failed ({p.returncode}): {err[-1500:]}")
        found = {int(pid): int(n.replace(",", "")) for pid, n in re.findall(r"==(\d+)== I\s+refs:\s+([\d,]+)", err)}
        counts[j] = {"self": found.pop(p.pid, 0), "workers": sorted(found.values())}
    one, workers = counts[1]["self"], counts[2]["workers"]
    if counts[1]["workers"] or not workers:
        print(f"(--many-instructions: unexpected processes: {counts})")
        return
    ratio = one / max(workers)
    report["many_instructions"] = {"j1": one, "j2_self": counts[2]["self"], "j2_workers": workers, "ratio": ratio}
    print(f"\n== -j 2 vs -j 1 in instructions (valgrind) ==\n-j 1: {one / 1e6:,.0f} M; -j 2: this process "
          f"{counts[2]['self'] / 1e6:,.0f} M, its workers {', '.join(f'{w / 1e6:,.0f} M' for w in workers)} "
          f"(each counted from this process's start); -j 1 / the busiest worker: {ratio:.2f}x")


def section_chunks(args, material, report: dict) -> None:
    print("\n== chunk-parallel scan of one log (realistic, unpinned): default vs serial vs 2 workers ==")
    print(f"{'log':>8} {'serial wall':>11} {'cpu':>6} {'default wall':>12} {'cpu':>6} {'2W wall':>8} {'cpu':>6} "
          f"{'x serial (default)':>18}  same")
    variants = (("serial", {"RULEKIT_SCAN_WORKERS": "0"}), ("default", {}), ("2W", {"RULEKIT_SCAN_WORKERS": "2"}))
    for size in [float(s) for s in args.chunk_sizes.split(",")]:
        job = build_job(f"realistic-{size:g}MiB", size, REALISTIC_INJECT * 100, True, material)
        best: dict[str, dict] = {}
        outs: dict[str, str] = {}
        for _round in range(2):
            for name, env in variants:
                r = rulekit(str(job), pin=False, extra_env=env)
                if name not in best or r["wall"] < best[name]["wall"]:
                    best[name] = r
                outs[name] = r["out"]
        same = len({json.dumps(json.loads(o), sort_keys=True) for o in outs.values()}) == 1
        row = {"size_mb": size, **{f"{n}_wall": best[n]["wall"] for n, _ in variants},
               **{f"{n}_cpu": best[n]["cpu"] for n, _ in variants}, "identical": same}
        report.setdefault("chunks", []).append(row)
        print(f"{size:>5g}MiB {best['serial']['wall']:>10.2f}s {best['serial']['cpu']:>5.2f}s "
              f"{best['default']['wall']:>11.2f}s {best['default']['cpu']:>5.2f}s {best['2W']['wall']:>7.2f}s "
              f"{best['2W']['cpu']:>5.2f}s {best['serial']['wall'] / best['default']['wall']:>17.2f}x  {same}",
              flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=float, default=32)
    ap.add_argument("--rates", default="realistic,0,0.1,1,5,20")
    ap.add_argument("--rss-sizes", default="16,64,256")
    ap.add_argument("--many", type=int, default=6)
    ap.add_argument("--many-size-mb", type=float, default=35)
    ap.add_argument("--chunk-sizes", default="16,64,256")
    ap.add_argument("--skip", default="", help="comma list of sections to skip: rates,warm,rss,many,chunks")
    ap.add_argument("--json", type=Path, help="also write the numbers as JSON")
    ap.add_argument("--pin", action="store_true", help="pin rulekit and rg to core 0 (rates and RSS sections)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of rulekit and rg per evidence rate, alternating; the table shows medians")
    ap.add_argument("--many-instructions", action="store_true",
                    help="also count the -j 1 and -j 2 runs' instructions per process (valgrind; minutes)")
    ap.add_argument("--cli", type=Path, help="the rulekit executable to time (default: this venv's)")
    args = ap.parse_args(argv)
    global RULEKIT
    if args.cli:
        RULEKIT = args.cli
    skip = set(filter(None, args.skip.split(",")))
    if not RULEKIT.exists():
        print(f"no installed CLI at {RULEKIT}")
        return 2
    DATA.mkdir(parents=True, exist_ok=True)
    material = corpus_material()
    report: dict = {"patterns": len(material[0]), "evidence_pool": len(material[1])}
    print(f"{len(material[0])} extractor regexes, {len(material[1])} evidence lines in the pool; "
          f"CLI {RULEKIT}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    if "rates" not in skip:
        rg = ensure_rg()
        if not rg:
            print("ripgrep is not available: rates section skipped")
        else:
            pat_file = DATA / "patterns_rg.txt"
            ascii_only = [p for p in material[0] if p.isascii()]  # rg --no-unicode rejects the others
            print(f"rg gets {len(ascii_only)} of them ({len(material[0]) - len(ascii_only)} non-ASCII pattern(s) "
                  f"left out: --no-unicode cannot take them)")
            pat_file.write_text("\n".join(translate(ascii_only, "rust")) + "\n")
            section_rates(args, material, rg, pat_file, report)
    if "warm" not in skip:
        section_warm(args, report)
    if "rss" not in skip:
        section_rss(args, material, report)
    if "many" not in skip:
        section_many(args, material, report)
    if "chunks" not in skip:
        section_chunks(args, material, report)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} (wall times are only comparable on an idle machine)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
