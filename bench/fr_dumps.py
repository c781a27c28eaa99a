"""Flight-recorder dumps: the safe reader against plain `pickle.loads`, and a whole job.

Writes RANKS synthetic dumps of ENTRIES entries each (PyTorch's layout: tuple
`process_group`, frames, sizes, dtypes; one all_reduce stuck because rank 1 never
enqueued it) under bench/.data/fr/, then in the same run times
- baseline: `pickle.loads` of every file (unsafe: it would run any code),
- `read_dump_file` (opcode walk + refusing unpickler + normalization),
- `rulekit attribute` of the job (read, pack, extract, analyse, report),
and prints MB/s and the ratio to the baseline.  The attribution must name rank 1.
Usage: python bench/fr_dumps.py [--ranks 32] [--entries 2000]
"""
from __future__ import annotations

import argparse
import json
import pickle
import shutil
import time
from pathlib import Path

from rulekit.engine.jobrun import attribute_dir
from rulekit.inputs.flight_recorder import read_dump_file
from rulekit.rules.loader import load_corpus

DATA = Path(__file__).resolve().parent / ".data" / "fr"


def dump(rank: int, ranks: int, entries: int) -> dict:
    last = entries if rank != 1 else entries - 1
    out = []
    for seq in range(1, last + 1):
        done = seq < entries
        out.append({
            "record_id": seq - 1, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": seq,
            "p2p_seq_id": 0, "op_id": seq, "profiling_name": "nccl:all_reduce", "time_created_ns": 10**18 + seq,
            "duration_ms": 1.5 if done else None, "input_sizes": [[1048576]], "input_dtypes": ["Float"],
            "output_sizes": [[1048576]], "output_dtypes": ["Float"], "state": "completed" if done else "started",
            "time_discovered_started_ns": 10**18 + seq + 1, "time_discovered_completed_ns": 10**18 + seq + 2 if done else None,
            "retired": done, "timeout_ms": 600000, "is_p2p": False, "thread_id": "1", "thread_name": "pt_main_thread",
            "frames": [{"name": "all_reduce", "filename": "torch/distributed/distributed_c10d.py", "line": 2501},
                       {"name": "train_step", "filename": "/workspace/train.py", "line": 88},
                       {"name": "main", "filename": "/workspace/train.py", "line": 200}],
        })
    return {"version": "2.10", "nccl_version": "2.21.5", "entries": out,
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(ranks)))}},
            "pg_status": {"0": {"last_enqueued_collective": last, "last_started_collective": last,
                                "last_completed_collective": entries - 1}}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=32)
    ap.add_argument("--entries", type=int, default=2000)
    args = ap.parse_args()
    shutil.rmtree(DATA, ignore_errors=True)
    (DATA / "fr").mkdir(parents=True)
    nodes = [f"node{i:04d}" for i in range(max(1, args.ranks // 8))]
    (DATA / "job.toml").write_text(f'[job]\nid = "fr-bench"\nstate = "FAILED"\nnodes = {json.dumps(nodes)}\n'
                                   f"tasks_per_node = {max(1, args.ranks // len(nodes))}\n")
    files = []
    for r in range(args.ranks):
        p = DATA / "fr" / f"nccl_trace_rank_{r}"
        p.write_bytes(pickle.dumps(dump(r, args.ranks, args.entries), protocol=2))
        files.append(p)
    mb = sum(p.stat().st_size for p in files) / 2**20
    t = time.perf_counter()
    for p in files:
        pickle.loads(p.read_bytes())
    base = time.perf_counter() - t
    t = time.perf_counter()
    for p in files:
        read_dump_file(p)
    safe = time.perf_counter() - t
    engine = load_corpus().engine
    t = time.perf_counter()
    res = attribute_dir(engine, DATA)
    whole = time.perf_counter() - t
    culprits = res["collectors"]["flight_recorder"]["culprit_ranks"]
    assert culprits == [1], culprits
    print(f"{args.ranks} dumps x {args.entries} entries, {mb:.1f} MiB")
    print(f"pickle.loads (unsafe baseline) {base:7.2f} s  {mb / base:8.1f} MiB/s")
    print(f"read_dump_file (safe)          {safe:7.2f} s  {mb / safe:8.1f} MiB/s  x{safe / base:.1f} the baseline")
    print(f"rulekit attribute (whole job)  {whole:7.2f} s  {mb / whole:8.1f} MiB/s  x{whole / base:.1f} the baseline")
    print(f"culprit ranks: {culprits}")
    shutil.rmtree(DATA, ignore_errors=True)


if __name__ == "__main__":
    main()
