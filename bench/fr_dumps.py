"""Flight-recorder dumps at scale: rulekit against plain `pickle.loads` and PyTorch's own
`fr_trace` on the same dumps, in the same run.

Writes RANKS dumps of ENTRIES entries each under bench/.data/fr-RANKSxENTRIES/ (kept
between runs with the same parameters): PyTorch's layout (tuple `process_group`, three frames,
sizes, dtypes, retired entries), tensor-parallel groups of 8 and data-parallel
groups across them, every step an all_reduce on each; rank HUNG (default: the
middle one) stops before its last tensor-parallel all_reduce, so its group waits
and the data-parallel groups of its group's other ranks wait behind them.  Then
times, each in its own process with its peak memory (the sum over the process
and its children, sampled every 20 ms):
- `pickle.loads` of every file (the floor of any reader; unsafe: it would run code),
- PyTorch's `fr_trace` over the folder (when torch is importable),
- `rulekit attribute` of the job (read in workers, analyse, report), which must
  name exactly rank HUNG,
and prints a table: wall and CPU seconds (user + system of the whole process tree:
steadier than wall time on a shared machine), peak RSS, and their ratios to
`pickle.loads` and to the dump bytes.  The machine may be shared: compare the
ratios of one run.
Usage: python bench/fr_dumps.py [--ranks 1024] [--entries 2000] [--hung N] [--skip-fr-trace]
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA_ROOT = HERE / ".data"
TP = 8


def dump(rank: int, ranks: int, entries: int, hung: int) -> dict:
    tp = rank // TP
    n_tp = ranks // TP
    tp_name, dp_name = str(1 + tp), str(1 + n_tp + rank % TP)
    steps = entries // 2
    out = []
    seq = {tp_name: 0, dp_name: 0}
    rid = 0
    for step in range(1, steps + 1):
        for name, desc, numel in ((tp_name, "TENSOR_MODEL_PARALLEL_GROUP", 1048576),
                                  (dp_name, "DATA_PARALLEL_GROUP", 2097152)):
            last_step = step == steps
            if last_step and rank == hung:
                break  # the hung rank never enqueues its last all_reduces
            if last_step and name == dp_name and rank // TP == hung // TP:
                break  # its group waits in the tensor-parallel one
            seq[name] += 1
            # the last step's ops: the hung rank's group waits in its TP all_reduce; the other
            # groups completed theirs and wait in their DP all_reduce for that group's ranks
            done = not last_step or (name == tp_name and rank // TP != hung // TP)
            t = 10**18 + rid * 1000
            out.append({
                "record_id": rid, "pg_id": int(name), "process_group": (name, desc), "collective_seq_id": seq[name],
                "p2p_seq_id": 0, "op_id": seq[name], "profiling_name": "nccl:all_reduce", "time_created_ns": t,
                "duration_ms": 1.5 if done else None, "input_sizes": [[numel]], "input_dtypes": ["Float"],
                "output_sizes": [[numel]], "output_dtypes": ["Float"], "state": "completed" if done else "started",
                "time_discovered_started_ns": t + 1, "time_discovered_completed_ns": t + 2 if done else None,
                "retired": done, "timeout_ms": 600000, "is_p2p": False, "thread_id": "1",
                "thread_name": "pt_main_thread",
                "frames": [{"name": "all_reduce", "filename": "torch/distributed/distributed_c10d.py", "line": 2501},
                           {"name": "train_step", "filename": "/workspace/train.py", "line": 88},
                           {"name": "main", "filename": "/workspace/train.py", "line": 200}],
            })
            rid += 1
    status = {}
    for name in (tp_name, dp_name):
        mine = [e for e in out if e["process_group"][0] == name]
        status[name] = {"last_enqueued_collective": max(e["collective_seq_id"] for e in mine),
                        "last_started_collective": max(e["collective_seq_id"] for e in mine),
                        "last_completed_collective": max(e["collective_seq_id"] for e in mine if e["retired"])}
    cfg = {tp_name: {"name": tp_name, "desc": "TENSOR_MODEL_PARALLEL_GROUP",
                     "ranks": str(list(range(tp * TP, tp * TP + TP)))},
           dp_name: {"name": dp_name, "desc": "DATA_PARALLEL_GROUP", "ranks": str(list(range(rank % TP, ranks, TP)))}}
    return {"version": "2.10", "nccl_version": "2.21.5", "entries": out, "pg_config": cfg, "pg_status": status}


def write(ranks: int, entries: int, hung: int) -> Path:
    DATA = DATA_ROOT / f"fr-{ranks}x{entries}"
    stamp = DATA / "params.json"
    params = {"ranks": ranks, "entries": entries, "hung": hung, "layout": 2}
    if stamp.exists() and json.loads(stamp.read_text()) == params:
        return DATA
    import shutil

    shutil.rmtree(DATA, ignore_errors=True)
    (DATA / "fr").mkdir(parents=True)
    nodes = [f"node{i:04d}" for i in range(max(1, ranks // 8))]
    (DATA / "job.toml").write_text(f'[job]\nid = "fr-bench"\nstate = "FAILED"\nnodes = {json.dumps(nodes)}\n'
                                   f"tasks_per_node = {max(1, ranks // len(nodes))}\n")
    for r in range(ranks):
        (DATA / "fr" / f"nccl_trace_rank_{r}").write_bytes(pickle.dumps(dump(r, ranks, entries, hung), protocol=2))
    stamp.write_text(json.dumps(params))
    return DATA


def _tree_rss(pid: int) -> int:
    """RSS bytes of a process and all its descendants (Linux /proc)."""
    kids: dict[int, list[int]] = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            kids.setdefault(ppid, []).append(int(p))
        except (OSError, ValueError, IndexError):
            continue
    total, todo = 0, [pid]
    while todo:
        q = todo.pop()
        todo += kids.get(q, [])
        try:
            with open(f"/proc/{q}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError):
            pass
    return total


def measure(cmd: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds (user + system of the process and all it waited for),
    peak RSS of the process tree, and stdout of one command."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = [0]

    def sample() -> None:
        while p.poll() is None:
            peak[0] = max(peak[0], _tree_rss(p.pid))
            time.sleep(0.02)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, err = p.communicate()
    wall = time.perf_counter() - t
    th.join()
    if p.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed ({p.returncode}): {err.decode(errors='replace')[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, peak[0], out.decode(errors="replace")


LOADS = """
import gc, pickle, sys
from pathlib import Path
gc.disable()
n = 0
for p in sorted(Path(sys.argv[1]).iterdir()):
    d = pickle.loads(p.read_bytes())
    n += len(d["entries"])
print(n)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--entries", type=int, default=2000)
    ap.add_argument("--hung", type=int, default=None)
    ap.add_argument("--skip-fr-trace", action="store_true")
    args = ap.parse_args()
    hung = args.ranks // 2 + 3 if args.hung is None else args.hung
    t = time.perf_counter()
    job = write(args.ranks, args.entries, hung)
    made = time.perf_counter() - t
    files = sorted((job / "fr").iterdir())
    mb = sum(p.stat().st_size for p in files) / 2**20
    print(f"{args.ranks} dumps x {args.entries} entries, {mb:.1f} MiB of pickles (written in {made:.1f} s); "
          f"rank {hung} hung; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    rows = []
    wall, cpu, rss, out = measure([sys.executable, "-c", LOADS, str(job / "fr")])
    rows.append(("pickle.loads of every dump (unsafe floor)", wall, cpu, rss, f"{int(out)} entries"))
    try:
        import torch  # noqa: F401

        have_torch = True
    except ImportError:
        have_torch = False
    if have_torch and not args.skip_fr_trace:
        wall, cpu, rss, out = measure([sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace",
                                       str(job / "fr"), "--allow-incomplete-ranks", "-p", "nccl_trace_rank_"])
        rows.append(("PyTorch fr_trace (torch " + torch.__version__ + ")", wall, cpu, rss, ""))
    rulekit = str(Path(sys.executable).with_name("rulekit"))
    wall, cpu, rss, out = measure([rulekit, "attribute", str(job), "--format", "json"])
    res = json.loads(out)[0]  # `--format json` prints a list of results (one job here)
    fr = res["collectors"]["flight_recorder"]
    assert fr["culprit_ranks"] == [hung], fr["culprit_ranks"]
    assert fr["dumps"] == args.ranks, fr["dumps"]
    rows.append(("rulekit attribute (read, analyse, report)", wall, cpu, rss,
                 f"culprits {fr['culprit_ranks']}, outcome {res['outcome']}, limits_hit {res.get('limits_hit', [])}"))
    print(f"load average {os.getloadavg()[0]:.1f} at the end (other processes share the machine when it is above 0)")
    base, base_cpu = rows[0][1], rows[0][2]
    print(f"{'':46s} {'wall s':>7s} {'x loads':>8s} {'CPU s':>7s} {'x loads':>8s} {'peak RSS':>10s} {'x dump bytes':>13s}")
    for name, wall, cpu, rss, note in rows:
        print(f"{name:46s} {wall:7.1f} {wall / base:8.2f} {cpu:7.1f} {cpu / base_cpu:8.2f} {rss / 2**20:6.0f} MiB "
              f"{rss / 2**20 / mb:13.2f}  {note}")


if __name__ == "__main__":
    main()
