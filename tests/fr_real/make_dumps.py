"""Real flight-recorder dumps: multi-process `torch.distributed` runs on gloo with a
fault injected, each written as a job directory (job.toml, applog/train.log with
`[rankN]:` prefixes, syslog/ when the fault leaves device evidence, fr/ with
PyTorch's own dumps).  Needs torch (the CPU build is enough); rulekit does not.

Every rank joins a gloo world of WORLD ranks, creates the tensor-parallel groups
(TP consecutive ranks) and the data-parallel groups (every TP-th rank) with
`new_group`, and runs STEPS steps of an all_reduce on its TP group then one on
its DP group (async, waited with a short timeout).  The flight recorder is on
(`TORCH_FR_BUFFER_SIZE`); a rank whose wait times out asks every rank to dump
(a file the others' watcher threads poll for, as TORCH_NCCL_DUMP_ON_TIMEOUT's
dump signal does), and each rank's watcher writes `_dump_fr_trace()` to
fr/nccl_trace_rank_<rank>.  Faults, at step STEP before op OP (0: TP, 1: DP):

- sleep     the rank's Python sleeps (its watcher still dumps: it never reached the op);
- raise     the rank raises an exception and exits (no dump; its traceback is in the log);
- gpu       the rank's "GPU" fails: it prints a CUDA error and exits (no dump) and its
            node's syslog gets an Xid 79, while the other ranks sit in other groups'
            collectives (the bystander case);
- gil       the rank holds the GIL in a C call (libc `sleep` through ctypes.PyDLL):
            its watcher cannot run, so no dump; faulthandler prints every rank's stack;
- mismatch  the rank issues a broadcast where its group issues an all_reduce;
- restart   two attempts in one folder: the first hangs on one sleeping rank (every
            rank dumps), the second on another rank that raises (the others dump
            again, over the first attempt's files).

`python tests/fr_real/make_dumps.py OUT [CASE ...]` writes OUT/<case>/ for the
sweep below (or the named cases) and OUT/<case>/truth.json: the injected ranks.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

STEP_TIMEOUT_S = 15.0  # a victim's wait; the hang is declared after it (long enough for a busy machine)
TASKS_PER_NODE = 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- one rank ------------------------------------------------------------------------------------


def _rank_main(spec: dict, rank: int, run: Path, port: int) -> None:
    os.environ["TORCH_FR_BUFFER_SIZE"] = "2000"
    import datetime
    import faulthandler

    import torch
    import torch.distributed as dist
    import torch._C._distributed_c10d as c10d

    world, tp, steps = spec["world"], spec["tp"], spec["steps"]
    fault = spec["faults"].get(str(rank))
    fr = run / "fr"

    def dump() -> None:
        data = c10d._dump_fr_trace()
        tmp = fr / f".rank{rank}.tmp"
        tmp.write_bytes(data)
        tmp.rename(fr / f"nccl_trace_rank_{rank}")

    def watcher() -> None:
        flag = run / "dump_now"
        while not flag.exists():
            time.sleep(0.05)
        dump()
        (run / f"dumped_{rank}").touch()

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    groups = {}
    for start in range(0, world, tp):
        ranks = list(range(start, start + tp))
        g = dist.new_group(ranks, group_desc="TENSOR_MODEL_PARALLEL_GROUP")
        if rank in ranks:
            groups[0] = g
    if tp < world:
        for i in range(tp):
            ranks = list(range(i, world, tp))
            g = dist.new_group(ranks, group_desc="DATA_PARALLEL_GROUP")
            if rank in ranks:
                groups[1] = g
    threading.Thread(target=watcher, daemon=True).start()
    t = torch.ones(256)
    dist.all_reduce(t)  # the start-up all_reduce of the default group
    for step in range(1, steps + 1):
        # a per-step watchdog of the training script: every rank's stack, if a step takes too long
        faulthandler.cancel_dump_traceback_later()
        faulthandler.dump_traceback_later(STEP_TIMEOUT_S * 1.5, exit=False)
        for op in (0, 1):
            if op not in groups:
                continue
            if fault and (fault["step"], fault["op"]) == (step, op):
                kind = fault["kind"]
                print(f"injecting fault {kind} at step {step} op {op}", flush=True)
                if kind == "sleep":
                    time.sleep(600)
                elif kind == "raise":
                    raise RuntimeError(f"injected failure in the data pipeline at step {step}")
                elif kind == "gpu":
                    print("torch.AcceleratorError: CUDA error: unspecified launch failure", file=sys.stderr, flush=True)
                    os._exit(1)
                elif kind == "gil":
                    import ctypes
                    ctypes.PyDLL(None).sleep(600)  # a C call that keeps the GIL
                elif kind == "mismatch":
                    w = dist.broadcast(t, src=dist.get_global_rank(groups[op], 0), group=groups[op], async_op=True)
                    _wait(w, run, rank)
                    continue
            w = dist.all_reduce(t, group=groups[op], async_op=True)
            _wait(w, run, rank)
    print(f"rank {rank} finished", flush=True)
    dist.barrier()
    os._exit(0)


def _wait(w, run: Path, rank: int) -> None:
    import datetime

    try:
        w.wait(timeout=datetime.timedelta(seconds=STEP_TIMEOUT_S))
    except Exception as e:  # noqa: BLE001 - the victim's timeout
        print(f"Watchdog caught collective operation timeout: {type(e).__name__}: {str(e)[:160]}", flush=True)
        (run / "dump_now").touch()
        deadline = time.time() + 90
        while not (run / f"dumped_{rank}").exists() and time.time() < deadline:
            time.sleep(0.05)
        os._exit(6)


# ---- one job -------------------------------------------------------------------------------------


def _attempt(spec: dict, out: Path, python: str) -> None:
    run = out / ".run"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    (out / "fr").mkdir(exist_ok=True)
    (run / "fr").symlink_to((out / "fr").resolve())
    port = _free_port()
    procs = []
    for r in range(spec["world"]):
        log = open(run / f"rank{r}.log", "wb")
        procs.append((subprocess.Popen([python, __file__, "--rank", str(r), "--spec", json.dumps(spec),
                                        "--run", str(run), "--port", str(port)],
                                       stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}),
                      log))
    deadline = time.time() + 300

    def settled(r: int) -> bool:  # dumped, dead, or a rank that cannot dump (its GIL is held)
        return ((run / f"dumped_{r}").exists() or procs[r][0].poll() is not None
                or spec["faults"].get(str(r), {}).get("kind") == "gil")

    while time.time() < deadline:
        if not [p for p, _ in procs if p.poll() is None]:
            break
        if (run / "dump_now").exists() and all(settled(r) for r in range(spec["world"])):
            time.sleep(1.0)
            break
        time.sleep(0.2)
    for p, log in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
        log.close()
    with open(out / "applog" / "train.log", "a") as f:
        for r in range(spec["world"]):
            for line in (run / f"rank{r}.log").read_text(errors="replace").splitlines():
                if "Failed to initialize NumPy" in line or "_conversion_method_template" in line:
                    continue
                f.write(f"[rank{r}]: {line}\n")
    shutil.rmtree(run, ignore_errors=True)


def make_case(name: str, spec: dict, root: Path, python: str = sys.executable) -> Path:
    out = root / name
    shutil.rmtree(out, ignore_errors=True)
    (out / "applog").mkdir(parents=True)
    world = spec["world"]
    nodes = [f"node{i + 1:04d}" for i in range(world // TASKS_PER_NODE)]
    (out / "job.toml").write_text(f'[job]\nid = "{name}"\nstate = "FAILED"\nnodes = {json.dumps(nodes)}\n'
                                  f"tasks_per_node = {TASKS_PER_NODE}\n")
    attempts = spec.get("attempts") or [spec]
    for a in attempts:
        _attempt({**spec, **a}, out, python)
    truth = {"culprits": sorted(int(r) for r in attempts[-1]["faults"]),
             "kinds": {r: f["kind"] for r, f in attempts[-1]["faults"].items()},
             "world": world, "tp": spec["tp"], "earlier": [sorted(int(r) for r in a["faults"]) for a in attempts[:-1]]}
    for r, f in attempts[-1]["faults"].items():
        if f["kind"] == "gpu":
            node = nodes[int(r) // TASKS_PER_NODE]
            (out / "syslog").mkdir(exist_ok=True)
            (out / "syslog" / f"{node}.log").write_text(
                f"Aug 11 03:31:23 {node} kernel: [ 7321.442190] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
                "name=<unknown>, GPU has fallen off the bus.\n")
    (out / "truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    return out


def sweep() -> dict[str, dict]:
    """The committed cases: each fault kind over group layouts and sizes."""
    cases: dict[str, dict] = {}

    def case(name, world, tp, faults, steps=3, **kw):
        cases[name] = {"world": world, "tp": tp, "steps": steps,
                       "faults": {str(r): {"kind": k, "step": s, "op": o} for r, (k, s, o) in faults.items()}, **kw}

    case("sleep-w4-tp2", 4, 2, {1: ("sleep", 2, 0)})
    case("sleep-w4-tp4", 4, 4, {3: ("sleep", 2, 0)})
    case("sleep-w8-tp4-dp", 8, 4, {6: ("sleep", 2, 1)})
    case("raise-w4-tp2", 4, 2, {2: ("raise", 2, 0)})
    case("gpu-w8-tp2-other-group", 8, 2, {3: ("gpu", 2, 0)})
    case("gpu-w4-tp2-two", 4, 2, {1: ("gpu", 2, 1), 2: ("gpu", 2, 0)})
    case("gil-w4-tp2", 4, 2, {0: ("gil", 2, 1)})
    case("mismatch-w4-tp4", 4, 4, {2: ("mismatch", 2, 0)})
    case("two-sleep-w8-tp2", 8, 2, {2: ("sleep", 2, 0), 7: ("sleep", 2, 0)})
    cases["restart-w4-tp2"] = {"world": 4, "tp": 2, "steps": 3, "attempts": [
        {"faults": {"3": {"kind": "sleep", "step": 2, "op": 0}}},
        {"faults": {"0": {"kind": "raise", "step": 2, "op": 1}}}]}
    return cases


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--rank", type=int)
    ap.add_argument("--spec")
    ap.add_argument("--run")
    ap.add_argument("--port", type=int)
    args = ap.parse_args()
    if args.rank is not None:
        _rank_main(json.loads(args.spec), args.rank, Path(args.run), args.port)
        return
    root = Path(args.out)
    for name, spec in sweep().items():
        if args.cases and name not in args.cases:
            continue
        t = time.time()
        make_case(name, spec, root)
        print(f"{name}: {time.time() - t:.1f} s", flush=True)


if __name__ == "__main__":
    main()
