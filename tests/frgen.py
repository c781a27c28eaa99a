"""A small generator of PyTorch NCCL flight-recorder dumps for tests and examples.

It simulates a data/tensor-parallel training loop on N ranks: every step issues
the collectives of `layout` (an all_reduce on the tensor-parallel group, then one
on the data-parallel group, by default), CPU-side enqueue is asynchronous but
synchronizes at the end of each step, and a collective completes when every
member enqueued it and every member's stream finished the previous one.  Faults:

- ``hang``   the rank's Python stops before collective `op` of step `step` (GIL,
             data loader, deadlock): it never enqueues it;
- ``gpu``    the rank enqueues it but its GPU never runs it (never started);
- ``dead``   as ``hang``, and the rank leaves no dump (its process died);
- ``sizes``  the rank issues the collective with other input/output sizes.

`dumps()` returns {rank: dump dict} shaped exactly like PyTorch writes them
(`version`, `pg_config`, `pg_status`, `nccl_version`, `entries` with tuple
`process_group`, `frames`, ...); `write_pickle` / `write_json` write files named
like TORCH_NCCL_DEBUG_INFO_TEMP_FILE does (`nccl_trace_rank_<rank>`).  Also the
watchdog-timeout lines the victims print, for end-to-end jobs.
"""
from __future__ import annotations

from datetime import datetime, timezone

import json
import pickle
from dataclasses import dataclass, field
from pathlib import Path

T0 = 1_796_111_600_000_000_000
TIMEOUT_MS = 600_000


@dataclass
class Fault:
    kind: str  # hang | gpu | dead | sizes
    step: int
    op: int = 0  # index of the collective within the step


@dataclass
class Op:
    step: int
    k: int
    group: str
    name: str
    sizes: list[list[int]]


@dataclass
class Sim:
    world: int = 16
    tp: int = 8  # tensor-parallel group size (consecutive ranks); tp == world -> no DP groups
    steps: int = 6
    faults: dict[int, Fault] = field(default_factory=dict)
    timing: bool = True  # TORCH_NCCL_ENABLE_TIMING: entries move to `started`
    buffer: int = 2000  # TORCH_NCCL_TRACE_BUFFER_SIZE
    numel: int = 1048576

    # ---- groups ----
    def groups(self) -> dict[str, tuple[str, list[int]]]:
        """pg name -> (desc, ranks), named in creation order like PyTorch ("0" is the world)."""
        out = {"0": ("default_pg", list(range(self.world)))}
        n = 1
        if self.tp < self.world:
            for start in range(0, self.world, self.tp):
                out[str(n)] = ("TENSOR_MODEL_PARALLEL_GROUP", list(range(start, start + self.tp)))
                n += 1
            for i in range(self.tp):
                out[str(n)] = ("DATA_PARALLEL_GROUP", list(range(i, self.world, self.tp)))
                n += 1
        return out

    def _my_groups(self, rank: int) -> list[str]:
        return [g for g, (_, rs) in self.groups().items() if rank in rs]

    def program(self, rank: int) -> list[Op]:
        gs = self.groups()
        mine = self._my_groups(rank)
        tp = next((g for g in mine if gs[g][0].startswith("TENSOR")), "0")
        dp = next((g for g in mine if gs[g][0].startswith("DATA")), None)
        ops = [Op(0, 0, "0", "nccl:all_reduce", [[1]])]  # the barrier-like all_reduce at start-up
        for s in range(1, self.steps + 1):
            step_ops = [(tp, "nccl:all_reduce", [[self.numel]])]
            if dp:
                step_ops.append((dp, "nccl:all_reduce", [[self.numel * 2]]))
            for k, (g, name, sizes) in enumerate(step_ops):
                f = self.faults.get(rank)
                if f and f.kind == "sizes" and f.step == s and f.op == k:
                    sizes = [[self.numel + 4096]]
                ops.append(Op(s, k, g, name, sizes))
        return ops

    # ---- simulation ----
    def run(self) -> dict[int, list[dict]]:
        progs = {r: self.program(r) for r in range(self.world)}
        gs = self.groups()
        pos = {r: 0 for r in progs}
        enq: dict[int, list[dict]] = {r: [] for r in progs}  # stream of enqueued ops
        seq: dict[tuple[int, str], int] = {}
        done: dict[int, int] = {r: 0 for r in progs}  # completed prefix length of the stream
        changed = True
        while changed:
            changed = False
            for r, prog in progs.items():
                f = self.faults.get(r)
                while pos[r] < len(prog):
                    op = prog[pos[r]]
                    if f and f.kind in ("hang", "dead") and (op.step, op.k) >= (f.step, f.op):
                        break
                    # synchronize at the end of a step: the previous step's ops completed
                    if any(e["op"].step < op.step and not e["completed"] for e in enq[r]):
                        break
                    key = (r, op.group)
                    seq[key] = seq.get(key, 0) + 1
                    enq[r].append({"op": op, "seq": seq[key], "completed": False, "started": False})
                    pos[r] += 1
                    changed = True
            # GPU streams: the first unfinished op of each rank is running (started)
            for r in progs:
                f = self.faults.get(r)
                i = done[r]
                if i < len(enq[r]):
                    e = enq[r][i]
                    stuck = f and f.kind == "gpu" and (e["op"].step, e["op"].k) >= (f.step, f.op)
                    if not stuck and not e["started"]:
                        e["started"] = True
                        changed = True
            # a collective completes when every member has it running
            for g, (_, members) in gs.items():
                heads = {}
                for r in members:
                    i = done[r]
                    if i < len(enq[r]) and enq[r][i]["op"].group == g and enq[r][i]["started"]:
                        heads[r] = enq[r][i]["seq"]
                if len(heads) == len(members) and len(set(heads.values())) == 1:
                    sizes = {json.dumps(enq[r][done[r]]["op"].sizes) for r in members}
                    if len(sizes) > 1:
                        continue  # mismatched sizes: NCCL hangs
                    for r in members:
                        enq[r][done[r]]["completed"] = True
                        done[r] += 1
                    changed = True
        return enq

    def dumps(self) -> dict[int, dict]:
        enq = self.run()
        gs = self.groups()
        out = {}
        for r, stream in enq.items():
            f = self.faults.get(r)
            if f and f.kind == "dead":
                continue
            entries = []
            for i, e in enumerate(stream):
                op = e["op"]
                desc = gs[op.group][0]
                t = T0 + i * 850_000_000
                state = "completed" if e["completed"] else ("started" if e["started"] and self.timing else "scheduled")
                entries.append({
                    "record_id": i, "pg_id": int(op.group), "process_group": (op.group, desc),
                    "collective_seq_id": e["seq"], "p2p_seq_id": 0, "op_id": e["seq"],
                    "profiling_name": op.name, "time_created_ns": t,
                    "duration_ms": 12.5 if e["completed"] and self.timing else None,
                    "input_sizes": op.sizes, "input_dtypes": ["Float"], "output_sizes": op.sizes,
                    "output_dtypes": ["Float"], "state": state,
                    "time_discovered_started_ns": t + 1000 if state != "scheduled" and self.timing else None,
                    "time_discovered_completed_ns": t + 2000 if e["completed"] else None,
                    "retired": e["completed"], "timeout_ms": TIMEOUT_MS, "is_p2p": False,
                    "frames": [{"name": "all_reduce", "filename": "torch/distributed/distributed_c10d.py", "line": 2501},
                               {"name": "train_step", "filename": "/workspace/train.py", "line": 88 + op.k}],
                    "thread_id": "140234", "thread_name": "pt_main_thread",
                })
            entries = entries[-self.buffer:]
            status = {}
            for g in self._my_groups(r):
                mine = [e for e in stream if e["op"].group == g]
                status[str(int(g))] = {
                    "last_enqueued_collective": max((e["seq"] for e in mine), default=-1),
                    "last_started_collective": max((e["seq"] for e in mine if e["started"]), default=-1) if self.timing else -1,
                    "last_completed_collective": max((e["seq"] for e in mine if e["completed"]), default=-1),
                }
            out[r] = {
                "version": "2.10",
                "pg_config": {g: {"name": g, "desc": gs[g][0], "ranks": str(gs[g][1])} for g in self._my_groups(r)},
                "pg_status": status, "nccl_version": "2.21.5", "entries": entries,
            }
        return out

    def watchdog_lines(self) -> list[str]:
        """The victims' ProcessGroupNCCL timeout lines (`srun -l`-style `[rankN]:` prefix)."""
        enq = self.run()
        lines = []
        for r, stream in enq.items():
            open_ = [e for e in stream if not e["completed"]]
            if not open_ or (self.faults.get(r) and self.faults[r].kind in ("hang", "dead")):
                continue
            e = open_[0]
            # the watchdog fires the timeout after the last op was enqueued (glog stamp, UTC)
            at = datetime.fromtimestamp((T0 + len(stream) * 850_000_000) / 1e9 + TIMEOUT_MS / 1000, timezone.utc)
            lines.append(f"[rank{r}]:[E{at:%m%d %H:%M:%S}.426415540 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
                         f"collective operation timeout: WorkNCCL(SeqNum={e['seq']}, OpType=ALLREDUCE, "
                         f"NumelIn={e['op'].sizes[0][0]}, NumelOut={e['op'].sizes[0][0]}, Timeout(ms)={TIMEOUT_MS}) "
                         f"ran for 600081 milliseconds before timing out.")
        return lines


def _write_dumps(dumps: dict[int, dict], folder: Path, prefix: str, suffix: str, encode) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for r, d in sorted(dumps.items()):
        p = folder / f"{prefix}{r}{suffix}"
        p.write_bytes(encode(d))
        out.append(p)
    return out


def write_pickle(dumps: dict[int, dict], folder: Path, prefix: str = "nccl_trace_rank_") -> list[Path]:
    return _write_dumps(dumps, folder, prefix, "", lambda d: pickle.dumps(d, protocol=2))


def write_json(dumps: dict[int, dict], folder: Path, prefix: str = "nccl_trace_rank_") -> list[Path]:
    return _write_dumps(dumps, folder, prefix, ".json", lambda d: json.dumps(d, indent=1).encode())


def write_job(root: Path, sim: Sim, nodes: list[str], applog_extra: list[str] = (), syslog: dict[str, list[str]] = None,
              fmt: str = "pickle") -> Path:
    """A job directory: job.toml, applog/train.log (victim timeouts + extra lines), syslog/, fr/."""
    root.mkdir(parents=True, exist_ok=True)
    tpn = sim.world // len(nodes)
    (root / "job.toml").write_text(
        f'[job]\nid = "{root.name}"\nstate = "FAILED"\nnodes = {json.dumps(nodes)}\ntasks_per_node = {tpn}\n')
    (root / "applog").mkdir(exist_ok=True)
    (root / "applog" / "train.log").write_text("\n".join([*sim.watchdog_lines(), *applog_extra]) + "\n")
    for node, lines in (syslog or {}).items():
        (root / "syslog").mkdir(exist_ok=True)
        (root / "syslog" / f"{node}.log").write_text("\n".join(lines) + "\n")
    (write_pickle if fmt == "pickle" else write_json)(sim.dumps(), root / "fr")
    return root
