"""End-to-end benchmark: `rulekit attribute` on a 1 GiB job directory (time, peak RSS)
and on many job directories at once (process pool speed-up).

    .venv/bin/python bench/attribute_e2e.py [--size-mb 1024] [--many 6] [--many-size-mb 128]

Builds (once, cached under bench/.data/, git-ignored) a copy of
examples/xid149-nvlink whose application log is padded with realistic benign
rank-prefixed training lines (bench/corpus.py) and whose node syslogs are padded
with benign kernel/systemd lines, so the attribution must still find the example's
root cause (checked against its expected.json) under ~1 GiB of noise.  Then runs
`rulekit attribute --format json` under /usr/bin/time -v and reports wall time and
peak RSS; then `rulekit attribute -j 1` vs `-j 0` on `--many` such directories.
Not part of `make test`.
"""
from __future__ import annotations

import argparse
import json
import random
import re
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


def _syslog_line(rng: random.Random, node: str) -> str:
    t = f"Jun  1 0{rng.randrange(3)}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
    return rng.choice([
        f"{t} {node} systemd[1]: Started Session {rng.randrange(9999)} of user train.",
        f"{t} {node} kernel: [{rng.uniform(1, 9999):.6f}] mlx5_core 0000:0c:00.0: mlx5_ib: port 1 state: ACTIVE",
        f"{t} {node} slurmd[{rng.randrange(999, 9999)}]: launch task StepId={rng.randrange(10**6)}.0 request from UID:1000",
        f"{t} {node} CRON[{rng.randrange(99999)}]: (root) CMD (/usr/local/bin/node-health --quiet)",
        f"{t} {node} nvidia-persistenced: device 0000:{rng.randrange(256):02x}:00.0 - persistence mode enabled.",
        f"{t} {node} kernel: [{rng.uniform(1, 9999):.6f}] IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready",
    ])


def _pad(dst: Path, src: Path, size: int, make_line, seed: int) -> None:
    """Write `size` bytes of noise, then the original file (its events keep their order)."""
    rng = random.Random(seed)
    with open(dst, "wb") as out:
        written = 0
        while written < size:
            data = ("\n".join(make_line(rng) for _ in range(5000)) + "\n").encode("utf-8")
            out.write(data)
            written += len(data)
        out.write(src.read_bytes())


def build_job(dest: Path, size_mb: int, seed: int = 1) -> Path:
    marker = dest / ".complete"
    if marker.exists():
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(EXAMPLE, dest)
    syslogs = sorted((EXAMPLE / "syslog").glob("*.log"))
    sys_share = size_mb * MiB // 10 // max(1, len(syslogs))
    for k, f in enumerate(syslogs):
        node = f.stem
        _pad(dest / "syslog" / f.name, f, sys_share, lambda r, n=node: _syslog_line(r, n), seed + k + 1)
    app_size = size_mb * MiB - sys_share * len(syslogs)
    for f in sorted((EXAMPLE / "applog").glob("*.log")):
        _pad(dest / "applog" / f.name, f, app_size, lambda r: f"{r.randrange(32)}: {benign_line(r)}", seed)
    marker.write_text("ok\n")
    return dest


def dir_size(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def run_timed(args: list[str]) -> tuple[float, int, subprocess.CompletedProcess]:
    """(wall seconds, peak RSS bytes, process); p.cpu_seconds: user + sys of it and its workers."""
    cmd = ["/usr/bin/time", "-v", *args] if Path("/usr/bin/time").exists() else args
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", p.stderr))
    p.cpu_seconds = cpu  # type: ignore[attr-defined]
    return dt, int(m.group(1)) * 1024 if m else -1, p


def check_expected(stdout: str) -> str:
    want = json.loads((EXAMPLE / "expected.json").read_text())
    try:
        got = json.loads(stdout)
    except json.JSONDecodeError:
        return "output is not JSON"
    results = got if isinstance(got, list) else [got]
    bad = []
    for r in results:
        res = dict(r.get("result", r))
        rc = res.get("root_cause")
        if isinstance(rc, dict):  # the CLI's JSON nests symptom and node under root_cause
            res["root_cause"] = rc.get("symptom")
            res.setdefault("root_node", rc.get("node"))
            if res.get("root_node") is None:
                res["root_node"] = rc.get("node")
        if isinstance(res.get("bad_nodes"), list):
            res["bad_nodes"] = [b.get("node") if isinstance(b, dict) else b for b in res["bad_nodes"]]
        for k, v in want.items():
            if res.get(k) != v:
                bad.append(f"{k}: {res.get(k)!r} != {v!r}")
    return "matches expected.json" if not bad else "DIFFERS: " + "; ".join(bad[:4])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--many", type=int, default=6, help="job directories for the process-pool run (0: skip)")
    ap.add_argument("--many-size-mb", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the -j 1 / -j 0 comparison")
    args = ap.parse_args(argv)

    probe = subprocess.run([str(RULEKIT), "attribute", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("`rulekit attribute` is not available yet:", probe.stderr.strip()[:200])
        return 2
    data = HERE / ".data"
    data.mkdir(exist_ok=True)
    t = time.perf_counter()
    job = build_job(data / f"job-{args.size_mb}MiB", args.size_mb)
    size = dir_size(job)
    print(f"job dir {job.name}: {size / MiB:.0f} MiB (built/checked in {time.perf_counter() - t:.1f} s)")

    dt, rss, p = run_timed([str(RULEKIT), "attribute", "--format", "json", str(job)])
    print(f"rulekit attribute (1 job, {size / MiB:.0f} MiB): {dt:.2f} s wall, {size / MiB / dt:.0f} MiB/s, "
          f"CPU {p.cpu_seconds:.1f} s, peak RSS {rss / MiB:.0f} MiB, exit {p.returncode}; "
          f"result {check_expected(p.stdout)}")
    if p.returncode not in (0, 1):
        print(p.stderr[-2000:])

    if args.many:
        base = build_job(data / f"job-{args.many_size_mb}MiB", args.many_size_mb)
        dirs = []
        for k in range(args.many):
            d = data / f"many-{args.many_size_mb}MiB-{k}"
            if not d.exists():
                shutil.copytree(base, d, copy_function=lambda s, t_: Path(t_).hardlink_to(s))
            dirs.append(str(d))
        total = sum(dir_size(Path(d)) for d in dirs)
        times: dict[int, float] = {}
        for _round in range(args.rounds):  # interleaved; best wall time kept (shared machine)
            for jobs in (1, 0):
                dt, rss, p = run_timed([str(RULEKIT), "attribute", "--format", "json", "-j", str(jobs), *dirs])
                times[jobs] = min(times.get(jobs, dt), dt)
                print(f"rulekit attribute -j {jobs} on {len(dirs)} jobs ({total / MiB:.0f} MiB): {dt:.2f} s wall, "
                      f"{total / MiB / dt:.0f} MiB/s, CPU {p.cpu_seconds:.1f} s ({100 * p.cpu_seconds / dt:.0f} %), "
                      f"peak RSS {rss / MiB:.0f} MiB, exit {p.returncode}")
        print(f"process-pool speed-up (-j 0 vs -j 1, best of {args.rounds}): {times[1] / times[0]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
