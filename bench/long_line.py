"""Memory of a very long log line: peak RSS and wall time of `rulekit attribute` on a
job whose application log holds one line of `--line-mb` MiB, and, as the baseline in
the same run, on a job with the same bytes cut into ordinary lines.

    .venv/bin/python bench/long_line.py [--line-mb 200] [--repeat 1] [--keep]

Both jobs are copies of examples/xid149-nvlink with the padding written before the
example's own application log (so the verdict must still be the example's root cause,
checked against its expected.json).  The long line is benign training-log text joined
by spaces; the baseline has the same text joined by newlines (same byte count).  Each
run is a child process; its peak RSS is `ru_maxrss` of the children (Linux: KiB),
read before and after so only that child counts.  Prints, per job, wall seconds and
peak MiB, and the ratio (long line / ordinary lines) and the peak's excess over the
baseline in units of the line.  Job folders go under bench/.data/ (git-ignored) and
are removed unless `--keep`.  Not part of `make test`.
"""
from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from corpus import benign_line  # noqa: E402

MiB = 1 << 20
EXAMPLE = ROOT / "examples" / "xid149-nvlink"
RULEKIT = ROOT / ".venv" / "bin" / "rulekit"


def padding(size: int, sep: bytes, seed: int = 1) -> bytes:
    """`size` bytes of benign text, its pieces joined by `sep` (b" ": one line)."""
    rng = random.Random(seed)
    piece = sep.join(f"{rng.randrange(32)}: {benign_line(rng)}".encode() for _ in range(20000)) + sep
    reps, rest = divmod(size, len(piece))
    return piece * reps + piece[:rest]


def build_job(dest: Path, size: int, one_line: bool) -> Path:
    """A copy of the example whose application log starts with `size` bytes of padding:
    one line (ended by a newline) or ordinary lines of the same bytes."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(EXAMPLE, dest)
    for f in sorted((EXAMPLE / "applog").glob("*.log")):
        pad = padding(size - 1, b" " if one_line else b"\n")
        with open(dest / "applog" / f.name, "wb") as out:
            out.write(pad)
            del pad
            out.write(b"\n")
            out.write(f.read_bytes())
    return dest


def run(job: Path) -> tuple[float, float, dict]:
    """(wall seconds, peak RSS MiB, result JSON) of one `rulekit attribute` child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run([str(RULEKIT), "attribute", str(job), "--format", "json"],
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode not in (0, 1):
        sys.exit(f"rulekit attribute {job}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    # ru_maxrss of the children is the largest of any child so far: a child smaller than
    # an earlier one does not show; run the larger job last or read it from a fresh parent
    return wall, max(after, before) / 1024, json.loads(proc.stdout)


def measure(job: Path) -> tuple[float, float, dict]:
    """Run in a fresh Python child so that its RUSAGE_CHILDREN holds only this job's run."""
    code = ("import json,sys; sys.path.insert(0, %r); import long_line as b; from pathlib import Path; "
            "w, m, r = b.run(Path(%r)); print(json.dumps([w, m, r]))") % (str(HERE), str(job))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    w, m, r = json.loads(out.stdout)
    return w, m, r


def root_cause(result) -> tuple:
    """(symptom, node) of a result (`--format json` prints a list of one) or of expected.json."""
    if isinstance(result, list):
        result = result[0]
    rc = result.get("root_cause")
    if isinstance(rc, dict):
        return rc.get("symptom"), rc.get("node")
    return rc, result.get("root_node")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--line-mb", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=1, help="runs per job (interleaved); the best is kept")
    ap.add_argument("--keep", action="store_true", help="keep the job folders under bench/.data/")
    args = ap.parse_args()
    size = args.line_mb * MiB
    data = HERE / ".data"
    data.mkdir(exist_ok=True)
    jobs = {"ordinary lines": build_job(data / "long_line_baseline", size, one_line=False),
            "one long line": build_job(data / "long_line_one", size, one_line=True)}
    expected = json.loads((EXAMPLE / "expected.json").read_text())
    best: dict[str, tuple[float, float]] = {}
    try:
        for _ in range(args.repeat):
            for name, job in jobs.items():
                wall, peak, result = measure(job)
                if root_cause(result) != root_cause(expected):
                    print(f"{name}: root cause {root_cause(result)}, expected {root_cause(expected)}", file=sys.stderr)
                    return 1
                w0, p0 = best.get(name, (wall, peak))
                best[name] = (min(w0, wall), min(p0, peak))
    finally:
        if not args.keep:
            for job in jobs.values():
                shutil.rmtree(job, ignore_errors=True)
    print(f"line of {args.line_mb} MiB, rulekit attribute, best of {args.repeat}")
    for name, (wall, peak) in best.items():
        print(f"  {name:15s} wall {wall:6.2f} s  peak RSS {peak:7.1f} MiB")
    (bw, bp), (lw, lp) = best["ordinary lines"], best["one long line"]
    print(f"  ratio (one line / ordinary): wall {lw / bw:.2f}x, peak RSS {lp / bp:.2f}x; "
          f"peak over the baseline: {(lp - bp) / args.line_mb:.2f}x the line")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
