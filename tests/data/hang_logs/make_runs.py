"""Real multi-process `torch.distributed` runs (gloo, CPU, flight recorder off) whose
output becomes the job directories next to this file: hangs and late ranks as a log
shows them, for tests/test_hang_logs.py.

    .venv/bin/python tests/data/hang_logs/make_runs.py [--out DIR] [--only NAME ...] [--list]

torch is not a dependency of rulekit: install the CPU wheel into the venv first
(`.venv/bin/pip install torch==2.13.0`).  Each scenario starts WORLD (4) worker
processes of this file on 127.0.0.1 (a free port each time), "two nodes of two
tasks" in the job record, and merges their stdout and stderr line by line with an
`srun -l`-style `N: ` prefix in arrival order, the way a launcher's log reads.  A
rank still running when the others have exited is killed, as a launcher kills the
rest of a failed step.  Timeouts are a few seconds so the runs take seconds.

The written `job.toml` carries the run's start time (so glog `[E1205 00:09:22.8...]`
stamps get their year).  `expected.json` in each directory is written by hand (what
is right for that run, never regenerated from rulekit's output); this script never
touches it.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORLD = 4
NODES = ("node0001", "node0002")
TIMEOUT_S = 5  # the collective / store timeout every scenario uses
DEADLINE_S = 240  # a scenario's wall-clock limit (importing torch in four processes at once can take a minute)


def now() -> str:
    return dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")


def say(msg: str) -> None:
    print(f"{now()} {msg}", flush=True)


# ---- the worker side (runs inside each rank's process) -----------------------------------------

def _init(dist, torch_timeout):
    dist.init_process_group("gloo", timeout=torch_timeout)


def w_stuck_rank(rank, dist, torch, timeout):
    """Every rank trains; rank 2 stops before the fourth all_reduce and never comes back
    (a stuck process: no line, no error), the others time out in gloo."""
    _init(dist, timeout)
    t = torch.ones(1024)
    for step in range(6):
        if rank == 2 and step == 3:
            time.sleep(3600)
        dist.all_reduce(t)
        say(f"step {step} done loss={1.0 / (step + 1):.3f}")


def w_busy_loading(rank, dist, torch, timeout):
    """Rank 1 loads its data shards (slowly, printing progress) after the others are
    already waiting in the first all_reduce."""
    _init(dist, timeout)
    t = torch.ones(1024)
    if rank == 1:
        for k in range(1, 21):
            say(f"Loading data shard {k}/20 from /data/train/shard_{k:05d}.bin")
            time.sleep(0.8)
    dist.all_reduce(t)
    say("step 0 done")


def w_tokenizing_before_init(rank, dist, torch, timeout):
    """Rank 1 tokenizes its dataset before init_process_group: the store waits of the
    others (TCPStore server on rank 0, the others' key waits) run out."""
    if rank == 1:
        for pct in range(0, 101, 10):
            say(f"Tokenizing dataset: {pct}% ({pct * 100}/10000 examples)")
            time.sleep(1.2)
    say("init_process_group")
    _init(dist, timeout)
    t = torch.ones(8)
    dist.all_reduce(t)
    say("step 0 done")


def w_mismatch(rank, dist, torch, timeout):
    """Rank 3 calls broadcast where the others call all_reduce (a program bug)."""
    _init(dist, timeout)
    t = torch.ones(16)
    dist.all_reduce(t)
    say("step 0 done")
    if rank == 3:
        dist.broadcast(torch.ones(16), src=0)
    else:
        dist.all_reduce(t)
    say("step 1 done")


def w_barrier_checkpoint(rank, dist, torch, timeout):
    """Rank 0 saves a checkpoint while the others wait in a monitored barrier."""
    _init(dist, timeout)
    if rank == 0:
        say("Saving checkpoint to /ckpt/run7/step_000100")
        time.sleep(12)
    dist.monitored_barrier(timeout=timeout)
    say("barrier passed")


def w_store_barrier_compiling(rank, dist, torch, timeout):
    """A barrier on the TCPStore (each rank sets its key, then waits for all keys): rank 3
    compiles its model first and arrives after the others gave up."""
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), WORLD, rank == 0,
                          timeout=timeout)
    if rank == 3:
        for k in range(1, 6):
            say(f"Compiling model graph {k}/5 (inductor)")
            time.sleep(2.5)
    store.set(f"barrier/arrived/{rank}", "1")
    try:
        store.wait([f"barrier/arrived/{r}" for r in range(WORLD)])
    finally:
        if rank == 0:
            time.sleep(10)  # the store lives on rank 0: keep it up for the late rank
    say("barrier passed")


def w_all_wait_equal(rank, dist, torch, timeout):
    """Every rank waits on the store for a key nobody sets: all time out alike."""
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), WORLD, rank == 0,
                          timeout=timeout)
    say("waiting for the dataset index to be published")
    try:
        store.wait(["dataset/index_ready"])
    finally:
        if rank == 0:
            time.sleep(2)


SCENARIOS = {
    "stuck-rank-allreduce": (w_stuck_rank, {}),
    "busy-loading-allreduce": (w_busy_loading, {}),
    "tokenizing-before-init": (w_tokenizing_before_init, {}),
    "mismatch-silent": (w_mismatch, {}),
    "mismatch-detail": (w_mismatch, {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}),
    "barrier-saving-checkpoint": (w_barrier_checkpoint, {}),
    "store-barrier-compiling": (w_store_barrier_compiling, {}),
    "all-ranks-wait-equal": (w_all_wait_equal, {}),
}


# job directories made from a run's lines: (the run, which lines, what it stands for)
DERIVED = {
    "stuck-rank-one-log-only": ("stuck-rank-allreduce", lambda line: line.startswith("0: "),
                                "only rank 0's output was collected (per-rank log files, one kept)"),
}


def worker(name: str) -> None:
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    fn, _env = SCENARIOS[name]
    try:
        fn(rank, dist, torch, dt.timedelta(seconds=TIMEOUT_S))
    except Exception:
        # report as an uncaught exception does (torch's hook adds the `[rankN]:` prefix), then
        # linger (two timeouts): a rank that gave up first must not close its connections before
        # the others' own timeouts fire, or on a busy machine they would report a closed
        # connection instead of the wait, at random (a launcher's teardown takes as long)
        sys.excepthook(*sys.exc_info())
        sys.stderr.flush()
        time.sleep(2 * TIMEOUT_S)
        os._exit(1)


# ---- the launcher side ----------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(name: str) -> tuple[list[str], dt.datetime]:
    """Run one scenario; its merged, rank-prefixed output lines and its start time."""
    _fn, extra = SCENARIOS[name]
    port = free_port()
    lines: list[str] = []
    lock = threading.Lock()
    procs = []
    start = dt.datetime.now().astimezone()
    for r in range(WORLD):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(WORLD), RANK=str(r),
                   LOCAL_RANK=str(r % 2), TORCH_CPP_LOG_LEVEL="INFO",
                   TORCH_FR_BUFFER_SIZE="0", PYTHONUNBUFFERED="1", PYTHONWARNINGS="ignore", **extra)
        p = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", name], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        procs.append(p)

    def pump(r: int, p: subprocess.Popen) -> None:
        for raw in p.stdout:  # type: ignore[union-attr]
            text = raw.rstrip("\n")
            if "Failed to initialize NumPy" in text or "_conversion_method_template" in text:
                continue  # the CPU wheel's note that numpy is not installed: not part of any job's log
            with lock:
                lines.append(f"{r}: {text}")

    pumps = [threading.Thread(target=pump, args=(r, p), daemon=True) for r, p in enumerate(procs)]
    for t in pumps:
        t.start()
    deadline = time.monotonic() + DEADLINE_S
    # a launcher ends the step once some rank failed and the others had their chance to report
    while time.monotonic() < deadline:
        codes = [p.poll() for p in procs]
        if all(c is not None for c in codes):
            break
        if any(c not in (None, 0) for c in codes) and sum(c is not None for c in codes) >= WORLD - 1:
            time.sleep(2)
            break
        time.sleep(0.2)
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait()
    for t in pumps:
        t.join(timeout=5)
    return lines, start


def write_job(out: Path, name: str, lines: list[str], start: dt.datetime, about: str | None = None) -> None:
    d = out / name
    (d / "applog").mkdir(parents=True, exist_ok=True)
    (d / "applog" / "train.log").write_text("\n".join(lines) + "\n")
    stamp = start.replace(microsecond=0).isoformat()
    about = about or " ".join(SCENARIOS[name][0].__doc__.split())
    nodes = ", ".join(f'"{n}"' for n in NODES)
    head = f"# Real run of tests/data/hang_logs/make_runs.py, scenario `{name}`:\n"
    head += "".join(f"# {chunk}\n" for chunk in _wrap(about))
    (d / "job.toml").write_text(head + f'[job]\nid = "{name}"\nstate = "FAILED"\nnodes = [{nodes}]\n'
                                f'tasks_per_node = {WORLD // len(NODES)}\nstart = "{stamp}"\n')


def _wrap(text: str, width: int = 88) -> list[str]:
    out, cur = [], ""
    for word in text.split():
        if cur and len(cur) + 1 + len(word) > width:
            out.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    return out + ([cur] if cur else [])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0
    if args.list:
        print("\n".join(SCENARIOS))
        return 0
    for name in args.only or list(SCENARIOS):
        lines, start = run(name)
        write_job(args.out, name, lines, start)
        print(f"{name}: {len(lines)} lines", file=sys.stderr)
        for derived, (src, keep, what) in DERIVED.items():
            if src == name:
                about = " ".join(SCENARIOS[name][0].__doc__.split()) + f" Of that run, {what}."
                write_job(args.out, derived, [ln for ln in lines if keep(ln)], start, about)
    return 0


if __name__ == "__main__":
    sys.exit(main())
