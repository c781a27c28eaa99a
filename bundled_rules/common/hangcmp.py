"""Which rank a hang waited for, from log evidence alone: the cross-rank comparison
behind hangs.py's HangLaggard filter.

Input: the job's events (read as they are: symptom, node, rule, timestamp, line,
observation, fields), the job record (world size, rank -> node) and which capture
rules lost hits to the extraction caps.  Output: an `Analysis` — the findings (a
collective mismatch, the laggard ranks with the criterion that named them and
whether they were busy in the program, or why the logs cannot tell), each with the
numbers compared and the events they came from, and one row per rank for the
report.

Criteria, in the order they are trusted:
1. *named*: gloo's monitored barrier names the late ranks itself;
2. *progress*: within one process group, the ranks whose last completed work (or
   the sequence number they timed out at) is below their peers';
3. *opcount*: NCCL's per-collective `opCount` lines: the processes whose last
   opCount on a communicator is below their peers';
4. *missing*: ranks of the job that never timed out waiting while (nearly) all
   others did — only when few are missing, and only when the logs show the
   missing rank's output or enough ranks reported that an excerpt is unlikely;
5. *stale*: a rank whose last progress line is far older than every other rank's.
A criterion names ranks only when they are a minority of the ranks it compares.
Mismatched collectives (different op or size at one sequence number of one
process group, or at one opCount of one communicator) come first: a program bug.

Pure: no engine state, no writes, no outcome; must not guess a laggard where the
numbers are equal or one rank's lines are all there is.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

COLLECTIVE_WAITS = frozenset({"NCCL_WATCHDOG_TIMEOUT", "GLOO_COLLECTIVE_TIMEOUT"})
STORE_WAITS = frozenset({"C10D_STORE_TIMEOUT", "RENDEZVOUS_TIMEOUT"})
WAITS = COLLECTIVE_WAITS | STORE_WAITS
# a rank that reports one of these was in a collective or store call when its peer went away
COMM_ERRORS = frozenset({
    "NCCL_CONNECTION_CLOSED", "RENDEZVOUS_CONNECT_FAILED", "NCCL_REMOTE_ERROR", "NCCL_SYSTEM_ERROR",
    "PYTHON_DISTRIBUTED_ERROR", "NCCL_COMM_ABORTED",
})
# a rank's own evidence that its program was busy or stalled in Python (the flight-recorder rules read the same)
WORKLOAD_EVIDENCE = frozenset({
    "PYTHON_GIL_HELD", "PYTHON_STACK_DUMP", "DATALOADER_TIMEOUT", "DATALOADER_WORKER_EXITED", "DATALOADER_BUS_ERROR",
})
PROGRESS_KINDS = frozenset({"busy", "data_prep_progress"})
PROGRESS_DATA = frozenset({"watchdog_progress", "dump_signal"})
# ops whose sizes may differ between ranks (uneven splits, a root's buffer), and point-to-point ops
VARIABLE_SIZE_OPS = frozenset({"ALLTOALL", "ALLTOALL_BASE", "_ALLTOALL_BASE", "GATHER", "SCATTER", "ALLGATHER",
                               "REDUCE_SCATTER", "COALESCED", "UNKNOWN", "ALLGATHER_COALESCED",
                               "REDUCE_SCATTER_TENSOR_COALESCED", "_ALLGATHER_BASE_COALESCED"})
P2P_OPS = frozenset({"SEND", "RECV", "RECVANYSOURCE", "SEND_RECV", "COALESCED", "UNKNOWN"})
NCCL_P2P = frozenset({"Send", "Recv"})
NCCL_FIXED_SIZE = frozenset({"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter"})
BUSY_SHARE = 0.8  # a progress bar at this share of the timeout was still running when the others gave up
BUSY_SLACK_S = 60.0  # a busy line up to a timeout (at least this) before the others began to wait still counts
STALE_MIN_S = 60.0  # a last progress this much older than every other rank's (or a quarter of the timeout) is stale
MAX_TABLE = 64  # rows of the per-rank table kept for the report


def _int(v: Any) -> int | None:
    if v is None or v == "":
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _time(e: Any) -> datetime | None:
    """The event's own timestamp, else the one carried from the file's last stamped line."""
    ts = e.timestamp or e.fields.get("carried_ts")
    if not ts:
        return None
    try:
        t = datetime.fromisoformat(str(ts))
    except ValueError:
        return None
    if t.tzinfo is not None:
        t = t.astimezone(timezone.utc).replace(tzinfo=None)
    return t


def order(a: Any, b: Any) -> int | None:
    """-1 / 0 / 1 as `a` comes before, with or after `b`: by time when both have one,
    else by line in the same file; None when nothing orders them."""
    ta, tb = _time(a), _time(b)
    if ta is not None and tb is not None:
        return (ta > tb) - (ta < tb)
    if a.obs_context_id is not None and a.obs_context_id == b.obs_context_id and a.line_num and b.line_num:
        return (a.line_num > b.line_num) - (a.line_num < b.line_num)
    return None


def _first(events: list) -> Any:
    """The earliest of `events` where they can be ordered (else the first given); those
    with a timestamp of their own first (a carried one may come from another rank's line
    of a merged log)."""
    own = [e for e in events if e.timestamp]
    pool = own or events
    best = pool[0]
    for e in pool[1:]:
        if order(e, best) == -1:
            best = e
    return best


def rank_of(e: Any) -> int | None:
    """The global rank an event speaks for: the line's `[rankN]:` / `N: ` prefix, else the
    rank a default-group (or group-less) line names, else a store barrier's rank."""
    f = e.fields
    r = _int(f.get("rank"))
    if r is not None:
        return r
    if f.get("pg") in (None, "", "0"):
        r = _int(f.get("pg_rank"))
        if r is not None:
            return r
    return _int(f.get("barrier_rank"))


def timeout_s(e: Any) -> float | None:
    """The timeout a waiting line states, in seconds."""
    f = e.fields
    for key, scale in (("timeout_ms", 1000.0), ("ms", 1000.0), ("secs", 1.0)):
        v = _int(f.get(key))
        if v:
            return v / scale
    t = f.get("timeout")
    if isinstance(t, str) and ":" in t:
        try:
            parts = [float(p) for p in t.split(":")]
        except ValueError:
            return None
        s = 0.0
        for p in parts:
            s = s * 60 + p
        return s or None
    return None


def world_size(job: Any, events: Iterable[Any] = ()) -> int | None:
    """The job's rank count: its record, else what a rendezvous / store line states."""
    if job.ranks:
        return max(job.ranks) + 1
    if job.tasks_per_node and job.nodes:
        return job.tasks_per_node * len(job.nodes)
    for e in events:
        for key in ("expected", "world_size"):
            v = _int(e.fields.get(key))
            if v:
                return v
    return None


@dataclass
class RankView:
    """What the logs say about one rank."""

    rank: int
    node: str | None = None
    waits: list = field(default_factory=list)  # its own collective / store timeouts
    comm_errors: list = field(default_factory=list)
    progress: list = field(default_factory=list)  # busy / data-preparation progress lines
    workload: list = field(default_factory=list)  # stack dumps, the GIL, the data loader
    numbers: list = field(default_factory=list)  # watchdog / dump-signal lines with last enqueued / completed
    seen: int = 0  # events of any kind on this rank

    def wait_kind(self) -> str | None:
        kinds = {("store" if w.symptom in STORE_WAITS else "collective") for w in self.waits}
        return "collective" if "collective" in kinds else ("store" if kinds else None)

    def row(self) -> dict[str, Any]:
        last = {}
        for e in self.numbers:
            pg = e.fields.get("pg") or "?"
            lc = _int(e.fields.get("last_completed"))
            if lc is not None and (pg not in last or lc < last[pg]):
                last[pg] = lc
        seqs = sorted({n for w in self.waits if w.symptom and (n := _int(w.fields.get("seq"))) is not None})
        out: dict[str, Any] = {"rank": self.rank, "node": self.node, "waited": self.wait_kind()}
        if seqs:
            out["timed_out_at"] = seqs
        if last:
            out["last_completed"] = last
        if self.progress:
            out["last_progress"] = _progress_label(self.progress[-1])
        return out


@dataclass
class Finding:
    kind: str  # "mismatch" | "laggard" | "undecided"
    why: str
    ranks: list[int] = field(default_factory=list)
    nodes: dict[int, str | None] = field(default_factory=dict)  # rank (or process index) -> node
    procs: list[str] = field(default_factory=list)  # host:pid of the opCount criterion
    criterion: str = ""
    wait_kind: str | None = None
    busy: dict[int, str] = field(default_factory=dict)  # laggard rank -> what it was doing
    busy_lines: dict[int, Any] = field(default_factory=dict)  # laggard rank -> the line that shows it
    evidence: list = field(default_factory=list)  # events compared (the first is the cause of an added event)
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Analysis:
    findings: list[Finding]
    views: dict[int, RankView]
    world: int | None
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """A plain summary for the report (the per-rank table bounded)."""
        ranks = sorted(self.views)
        rows = [self.views[r].row() for r in ranks[:MAX_TABLE]]
        out: dict[str, Any] = {"world": self.world, "ranks_seen": len(ranks), "ranks": rows, "notes": self.notes,
                               "findings": []}
        if len(ranks) > MAX_TABLE:
            out["ranks_left_out"] = len(ranks) - MAX_TABLE
        for f in self.findings:
            item: dict[str, Any] = {"verdict": f.kind, "why": f.why}
            if f.criterion:
                item["criterion"] = f.criterion
            if f.ranks:
                item["ranks"] = [{"rank": r, "node": f.nodes.get(r), **({"busy": f.busy[r]} if r in f.busy else {})}
                                 for r in f.ranks]
            if f.procs:
                item["processes"] = f.procs
            if f.details:
                item.update(f.details)
            out["findings"].append(item)
        return out

    def to_field(self) -> str:
        return json.dumps(self.summary(), sort_keys=True)


def _progress_label(e: Any) -> str:
    f = e.fields
    what = f.get("activity") or f.get("desc") or "progress"
    extra = []
    if f.get("pct") not in (None, ""):
        extra.append(f"{f['pct']}%")
    if f.get("elapsed_s") not in (None, ""):
        extra.append(f"{f['elapsed_s']}s elapsed")
    ts = e.timestamp or f.get("carried_ts")
    if ts:
        extra.append(f"at {ts}")
    return f"{what} ({', '.join(extra)})" if extra else str(what)


def _ranks_text(ranks: Iterable[int]) -> str:
    """`rank 2`, `ranks 0, 1, 3`, `24 ranks (0, 1, 2, 3, 4, 5, ...)`."""
    rs = sorted(set(ranks))
    if len(rs) == 1:
        return f"rank {rs[0]}"
    if len(rs) > 8:
        return f"{len(rs)} ranks ({', '.join(map(str, rs[:6]))}, ...)"
    return "ranks " + ", ".join(map(str, rs))


def _minority(values: dict[Any, int]) -> tuple[list[Any], int, int] | None:
    """(the keys at the lowest value, that value, the highest) when those keys are at most
    half of all (one of two counts); None when all agree or the low ones are the most."""
    if len(values) < 2:
        return None
    lo, hi = min(values.values()), max(values.values())
    if lo == hi:
        return None
    low = sorted(k for k, v in values.items() if v == lo)
    if len(low) * 2 > len(values):
        return None
    return low, lo, hi


class _Builder:
    def __init__(self, job: Any):
        self.job = job
        self.views: dict[int, RankView] = {}
        self.barrier: list = []  # monitored-barrier lines
        self.coll: list = []  # NCCL opCount lines
        self.mismatch_lines: list = []
        self.all_waits: list = []
        self.unranked_waits = 0
        self.everything: Callable[[], Iterable[Any]] | None = None  # all of the job's events, on request
        self._printed: set[int] | None = None

    def printed(self, rank: int) -> bool:
        """Whether any line of `rank` made an event (its output is in the logs)."""
        if rank in self.views and self.views[rank].seen:
            return True
        if self.everything is None:
            return False
        if self._printed is None:
            self._printed = {r for e in self.everything() if (r := rank_of(e)) is not None}
        return rank in self._printed

    def view(self, rank: int, node: str | None) -> RankView:
        v = self.views.get(rank)
        if v is None:
            v = self.views[rank] = RankView(rank, self.job.rank_to_node(rank) or node)
        elif v.node is None and node:
            v.node = node
        return v

    def add(self, e: Any) -> None:
        f = e.fields
        kind = f.get("kind")
        if kind == "barrier_late":
            self.barrier.append(e)
        elif kind == "nccl_coll":
            self.coll.append(e)
        sym = e.symptom
        if sym == "NCCL_COLLECTIVE_MISMATCH":
            self.mismatch_lines.append(e)
        r = rank_of(e)
        if sym in WAITS or kind == "watchdog_progress":
            self.all_waits.append(e)
        if r is None:
            if sym in WAITS or kind == "watchdog_progress":
                self.unranked_waits += 1
            return
        v = self.view(r, e.node)
        v.seen += 1
        if sym in WAITS or kind == "watchdog_progress":  # (the watchdog's own line about the work it gave up on)
            v.waits.append(e)
        elif sym in COMM_ERRORS:
            v.comm_errors.append(e)
        elif sym in WORKLOAD_EVIDENCE:
            v.workload.append(e)
        if kind in PROGRESS_KINDS:
            v.progress.append(e)
        elif kind in PROGRESS_DATA and _int(f.get("last_completed")) is not None:
            v.numbers.append(e)


def analyze(events: Iterable[Any], job: Any, capped_rules: Iterable[str] = (),
            everything: Callable[[], Iterable[Any]] | None = None) -> Analysis | None:
    """The comparison of one job's ranks; None when nothing in it waited (no hang).
    `events`: the waits, connection errors, workload evidence, mismatch reports and the
    progress / opCount / barrier data (more is read and ignored); `everything`: all of the
    job's events, asked for only when whether a rank printed anything at all decides."""
    b = _Builder(job)
    b.everything = everything
    events = list(events)
    for e in events:
        b.add(e)
    for v in b.views.values():
        v.progress.sort(key=lambda e: (_time(e) or datetime.min, e.line_num or 0))
    capped = set(capped_rules)
    world = world_size(job, b.all_waits)
    a = Analysis([], b.views, world)
    if capped:
        a.notes.append("extraction kept only the first lines of " + ", ".join(sorted(capped))
                       + " (the rest were counted): who reported and the last of each is not known for those")
    mismatch = _reported_mismatch(b) or _watchdog_mismatch(b) or _opcount_mismatch(b, capped)
    if mismatch:
        a.findings.append(mismatch)
        return a
    waits = b.all_waits
    if not waits and not b.barrier:
        return None  # nothing waited: processes a collective or two apart are a job in flight, not a hang
    first_wait = _first(waits) if waits else b.barrier[0]
    limit = min((t for t in (timeout_s(w) for w in waits) if t), default=None)
    for crit in (_named, _progress_numbers, _opcount_laggard_if, _missing, _stale):
        got = crit(b, a, capped, world)
        if got:
            for r in got.ranks:
                what = _busy(b.views.get(r), first_wait, limit, waits)
                if what:
                    got.busy[r], got.busy_lines[r] = what
                got.nodes.setdefault(r, (b.views[r].node if r in b.views else None) or job.rank_to_node(r))
            a.findings.append(got)
            return a
    a.findings.append(Finding("undecided", _why_undecided(b, a, world, capped), evidence=[first_wait],
                              wait_kind=_wait_kind(b)))
    return a


def _wait_kind(b: _Builder) -> str | None:
    kinds = {v.wait_kind() for v in b.views.values()} - {None}
    return "collective" if "collective" in kinds else ("store" if kinds else None)


# ---- mismatched collectives ------------------------------------------------------------------

def _reported_mismatch(b: _Builder) -> Finding | None:
    """PyTorch's or NCCL's own mismatch report (TORCH_DISTRIBUTED_DEBUG=DETAIL, NCCL WARN):
    already a symptom; the rank most of the reports name as running something else is noted."""
    if not b.mismatch_lines:
        return None
    named = Counter(r for e in b.mismatch_lines for k in ("other_rank", "mismatch_rank", "around_rank")
                    if (r := _int(e.fields.get(k))) is not None)
    odd = []
    if named:
        top, n = named.most_common(1)[0]
        if n * 2 > sum(named.values()):
            odd = [top]
    why = "the ranks' own lines report mismatched collectives" + (
        f"; most of them name rank {odd[0]} as running a different one" if odd else "")
    return Finding("mismatch", why, ranks=odd, nodes={r: b.job.rank_to_node(r) for r in odd}, criterion="reported",
                   evidence=b.mismatch_lines[:1])


def _watchdog_pg(b: _Builder, v: RankView, w: Any) -> str | None:
    """The process group of a timeout line: its own, else that of the same rank's watchdog
    line about the same sequence number."""
    pg = w.fields.get("pg")
    if pg not in (None, ""):
        return str(pg)
    seq = w.fields.get("seq")
    for n in v.numbers:
        if n.fields.get("seq") == seq and n.fields.get("pg") not in (None, ""):
            return str(n.fields["pg"])
    return None


def _timeouts_by_pg(b: _Builder) -> dict[str | None, dict[int, tuple]]:
    """pg -> rank -> (seq, op, numel_in, numel_out, event) of each rank's NCCL timeout in a
    known process group (the line's own, or its rank's watchdog line about the same
    SeqNum); a rank with timeouts at several sequence numbers of one group is left out
    there: its lines belong to more than one collective.  Sequence numbers count per
    group, so lines of no known group are never compared."""
    out: dict[str | None, dict[int, list]] = {}
    for r, v in b.views.items():
        for w in v.waits:
            if w.symptom != "NCCL_WATCHDOG_TIMEOUT" or _int(w.fields.get("seq")) is None:
                continue
            pg = _watchdog_pg(b, v, w)
            f = w.fields
            out.setdefault(pg, {}).setdefault(r, []).append(
                (_int(f["seq"]), f.get("op"), _int(f.get("numel_in")), _int(f.get("numel_out")), w))
    clean: dict[str | None, dict[int, tuple]] = {}
    for pg, ranks in out.items():
        if pg is None:
            continue  # a timeout line of no known group: ranks of different groups would be compared
        for r, items in ranks.items():
            if len({i[0] for i in items}) == 1:
                clean.setdefault(pg, {})[r] = items[0]
    return clean


def _odd_ones(sig: dict[Any, Any]) -> list[Any]:
    """The keys whose collective differs from the majority's (all of them when none has one)."""
    common, n = Counter(sig.values()).most_common(1)[0]
    return sorted(k for k, v in sig.items() if v != common) if n * 2 > len(sig) else sorted(sig)


def _watchdog_mismatch(b: _Builder) -> Finding | None:
    for pg, ranks in sorted(_timeouts_by_pg(b).items()):
        by_seq: dict[int, dict[int, tuple]] = {}
        for r, item in ranks.items():
            by_seq.setdefault(item[0], {})[r] = item
        for seq, items in sorted(by_seq.items()):
            if len(items) < 2:
                continue
            ops = {r: str(i[1] or "").upper() for r, i in items.items()}
            if any(op in P2P_OPS or not op for op in ops.values()):
                continue
            if len(set(ops.values())) > 1:
                sig = ops
                what = "ops"
            else:
                op = next(iter(ops.values()))
                if op.strip("_") in {o.strip("_") for o in VARIABLE_SIZE_OPS}:
                    continue
                sig = {r: (i[2], i[3]) for r, i in items.items() if i[2] is not None}
                if len(sig) < 2 or len(set(sig.values())) < 2:
                    continue
                what = "sizes"
            odd = _odd_ones(sig)
            where = f"process group {pg}"
            desc = "; ".join(f"rank {r}: {items[r][1]} NumelIn={items[r][2]} NumelOut={items[r][3]}"
                             for r in sorted(items))
            return Finding("mismatch", f"at SeqNum {seq} of {where} the ranks issued different collectives "
                                       f"({what} differ): {desc}",
                           ranks=odd, nodes={r: b.views[r].node for r in odd}, criterion="watchdog",
                           evidence=[items[r][4] for r in sorted(items)],
                           details={"seq": seq, "pg": pg})
    return None


def _coll_groups(b: _Builder) -> dict[int, dict[str, list]]:
    """nranks -> process (host:pid) -> its opCount lines, for communicator sizes where each
    process printed one communicator only (the comm pointer differs between processes,
    so only then are the lines of one communicator known to belong together)."""
    by: dict[int, dict[str, dict[str, list]]] = {}
    for e in b.coll:
        f = e.fields
        n = _int(f.get("nranks"))
        if n is None or n < 2:
            continue
        proc = f"{f.get('host')}:{f.get('pid')}"
        by.setdefault(n, {}).setdefault(proc, {}).setdefault(str(f.get("comm")), []).append(e)
    out: dict[int, dict[str, list]] = {}
    for n, procs in by.items():
        if all(len(comms) == 1 for comms in procs.values()) and len(procs) >= 2:
            out[n] = {p: next(iter(c.values())) for p, c in procs.items()}
    return out


def _opcount(e: Any) -> int | None:
    try:
        return int(str(e.fields.get("opcount")), 16)
    except (TypeError, ValueError):
        return None


def _opcount_mismatch(b: _Builder, capped: set[str]) -> Finding | None:
    for n, procs in sorted(_coll_groups(b).items()):
        at: dict[int, dict[str, Any]] = {}
        for p, lines in procs.items():
            for e in lines:
                oc = _opcount(e)
                if oc is not None:
                    at.setdefault(oc, {}).setdefault(p, e)
        for oc, per in sorted(at.items()):
            if len(per) < 2:
                continue
            ops = {p: str(e.fields.get("op")) for p, e in per.items()}
            if any(op in NCCL_P2P for op in ops.values()):
                continue
            if len(set(ops.values())) > 1:
                sig = ops
            else:
                if next(iter(ops.values())) not in NCCL_FIXED_SIZE:
                    continue
                sig = {p: (e.fields.get("count"), e.fields.get("dtype")) for p, e in per.items()}
                if len(set(sig.values())) < 2:
                    continue
            odd = _odd_ones(sig)
            desc = "; ".join(f"{p}: {e.fields.get('op')} count {e.fields.get('count')} datatype {e.fields.get('dtype')}"
                             for p, e in sorted(per.items()))
            f = Finding("mismatch", f"at opCount {oc:x} of the {n}-rank communicator the processes issued different "
                                    f"collectives: {desc}", procs=odd, criterion="opcount",
                        evidence=[per[p] for p in sorted(per)], details={"opcount": f"{oc:x}", "nranks": n})
            f.details["nodes"] = sorted({per[p].node for p in odd if per[p].node})
            return f
    return None


# ---- laggard criteria --------------------------------------------------------------------------

def _named(b: _Builder, a: Analysis, capped: set[str], world: int | None) -> Finding | None:
    late: dict[int, list] = {}
    for e in b.barrier:
        f = e.fields
        for part in str(f.get("late") or "").split(","):
            r = _int(part.strip())
            if r is not None:
                late.setdefault(r, []).append(e)
        r = _int(f.get("waited_for"))
        if r is not None:
            late.setdefault(r, []).append(e)
    if not late:
        return None
    ranks = sorted(late)
    for r in ranks:
        b.view(r, None)
    waiters = sorted({_int(e.fields.get("waiter")) for e in b.barrier if _int(e.fields.get("waiter")) is not None})
    why = (f"gloo's monitored barrier names {_ranks_text(ranks)} as not arriving"
           + (f" (reported by {_ranks_text(waiters)})" if waiters else ""))
    return Finding("laggard", why, ranks=ranks, criterion="named", wait_kind="store",
                   evidence=[late[r][0] for r in ranks])


def _progress_numbers(b: _Builder, a: Analysis, capped: set[str], world: int | None) -> Finding | None:
    # last completed work, and the sequence number each rank timed out at, per process group
    done: dict[str, dict[int, tuple[int, Any]]] = {}
    for r, v in b.views.items():
        for e in v.numbers:
            if e.fields.get("pg") in (None, ""):
                continue  # work counts per group: a line of no known group is not compared
            pg = str(e.fields["pg"])
            lc = _int(e.fields.get("last_completed"))
            cur = done.setdefault(pg, {}).get(r)
            if cur is None or lc < cur[0]:
                done[pg][r] = (lc, e)
    seqs = {pg: {r: (x[0], x[4]) for r, x in per.items()} for pg, per in _timeouts_by_pg(b).items()}
    for table, key, text in (
            (done, "last_completed", "{low} completed work up to {lo}{where}, while {others} completed up to {hi}"),
            (seqs, "seq", "{low} timed out waiting on SeqNum {lo}{where}, while {others} had moved on to SeqNum {hi}")):
        for pg, per in sorted(table.items()):
            got = _minority({r: x[0] for r, x in per.items()})
            if not got:
                continue
            low, lo, hi = got
            others = sorted(set(per) - set(low))
            why = text.format(low=_ranks_text(low), others=_ranks_text(others), lo=lo, hi=hi,
                              where=f" of process group {pg}")
            return Finding("laggard", why, ranks=low, criterion="progress", wait_kind="collective",
                           evidence=[per[r][1] for r in low] + [per[others[0]][1]],
                           details={"pg": pg, key: {str(r): per[r][0] for r in sorted(per)}})
    return None


def _opcount_laggard(b: _Builder) -> Finding | None:
    for n, procs in sorted(_coll_groups(b).items()):
        last = {}
        line = {}
        for p, lines in procs.items():
            for e in lines:
                oc = _opcount(e)
                if oc is not None and (p not in last or oc > last[p]):
                    last[p], line[p] = oc, e
        got = _minority(last)
        if got:
            low, lo, hi = got
            others = sorted(set(last) - set(low))
            why = (f"process(es) {', '.join(low)} last enqueued opCount {lo:x} on the {n}-rank communicator, "
                   f"while {', '.join(others[:6])}{' ...' if len(others) > 6 else ''} reached {hi:x}")
            f = Finding("laggard", why, procs=low, criterion="opcount", wait_kind="collective",
                        evidence=[line[p] for p in low] + [line[others[0]]],
                        details={"nranks": n, "last_opcount": {p: f"{v:x}" for p, v in sorted(last.items())}})
            f.details["nodes"] = sorted({line[p].node for p in low if line[p].node})
            return f
    return None


def _opcount_laggard_if(b: _Builder, a: Analysis, capped: set[str], world: int | None) -> Finding | None:
    if "NcclCollOpCount" in capped:
        return None
    return _opcount_laggard(b)


def _missing(b: _Builder, a: Analysis, capped: set[str], world: int | None) -> Finding | None:
    if not world or capped & {"NcclWatchdogTimeout", "GlooCollectiveTimeout", "C10dStoreWaitTimeout",
                              "C10dStoreSocketTimeout"}:
        return None
    waits = b.all_waits
    first_wait = _first(waits)
    limit = min((t for t in (timeout_s(w) for w in waits) if t), default=None)
    waiters = {r for r, v in b.views.items() if v.waits}
    engaged = set(waiters)
    for r, v in b.views.items():
        if v.comm_errors and r not in waiters and not _busy(v, first_wait, limit, waits):
            engaged.add(r)
    missing = [r for r in range(world) if r not in engaged]
    if not missing or len(waiters) < 2 or len(missing) > max(1, world // 8):
        return None
    alive = [r for r in missing if b.printed(r)]
    if len(engaged) < 3 and len(alive) < len(missing):
        return None  # two ranks' lines could be an excerpt: the missing rank's own lines must be there
    for r in missing:
        b.view(r, None)
    kind = _wait_kind(b)
    what = "collective" if kind == "collective" else "store / rendezvous wait"
    why = (f"{_ranks_text(missing)} never timed out in the {what}{_wait_desc(b)} that "
           f"{_ranks_text(waiters)} ({len(waiters)} of {world}) timed out in")
    return Finding("laggard", why, ranks=missing, criterion="missing", wait_kind=kind,
                   evidence=[first_wait], details={"waiting_ranks": len(waiters), "world": world})


def _wait_desc(b: _Builder) -> str:
    """` (ALLREDUCE, SeqNum 9120 of process group 0)` when every ranked NCCL timeout names the
    same collective, else ``."""
    per = [x for g in _timeouts_by_pg(b).items() for x in ((g[0], y) for y in g[1].values())]
    keys = {(pg, item[0], item[1]) for pg, item in per}
    if len(keys) != 1:
        return ""
    pg, seq, op = next(iter(keys))
    return f" ({op}, SeqNum {seq} of process group {pg})"


def _stale(b: _Builder, a: Analysis, capped: set[str], world: int | None) -> Finding | None:
    last: dict[int, datetime] = {}
    ev: dict[int, Any] = {}
    for r, v in b.views.items():
        for e in v.progress:
            t = _time(e)
            if t is not None and (r not in last or t > last[r]):
                last[r], ev[r] = t, e
    if len(last) < 3:
        return None
    limit = min((t for t in (timeout_s(w) for w in b.all_waits) if t), default=None)
    gap = max(STALE_MIN_S, (limit or 0) / 4)
    stale = []
    for r, t in last.items():
        others = [u for q, u in last.items() if q != r]
        if all((u - t).total_seconds() >= gap for u in others):
            stale.append(r)
    if len(stale) != 1:
        return None
    r = stale[0]
    closest = min(u for q, u in last.items() if q != r)
    why = (f"rank {r} printed its last progress at {last[r].isoformat(sep=' ')}, "
           f"{int((closest - last[r]).total_seconds())} s before any other rank's last progress")
    return Finding("laggard", why, ranks=[r], criterion="stale", wait_kind=_wait_kind(b),
                   evidence=[ev[r]],
                   details={"last_progress": {str(q): t.isoformat() for q, t in sorted(last.items())}})


def _busy(v: RankView | None, first_wait: Any, limit: float | None, waits: list) -> tuple[str, Any] | None:
    """What the rank was visibly doing in the program while the others waited: a progress
    line at or after the first timeout, or up to one more timeout (at least a minute)
    before the others began to wait (`first_wait` is when they gave up), a progress bar
    that had run most of the timeout, or a stack dump / the GIL / a data-loader stall."""
    if v is None:
        return None
    for e in v.workload:
        return f"{e.symptom} ({(e.datum or '')[:80].strip()})", e
    for e in reversed(v.progress):
        elapsed = _int(e.fields.get("elapsed_s"))
        if limit and elapsed is not None and elapsed >= BUSY_SHARE * limit:
            return _progress_label(e), e
        if first_wait is None:
            continue
        rel = order(e, first_wait)
        if rel is not None and rel >= 0:
            return _progress_label(e), e
        te, tw = _time(e), _time(first_wait)
        window = limit + max(limit, BUSY_SLACK_S) if limit else None
        if window and te is not None and tw is not None and (tw - te).total_seconds() <= window:
            return _progress_label(e), e  # it started within a timeout (or a minute) before the others began to wait
    return None


def _why_undecided(b: _Builder, a: Analysis, world: int | None, capped: set[str]) -> str:
    ranks = sorted(r for r, v in b.views.items() if v.waits)
    if not ranks:
        return (f"{b.unranked_waits} timeout line(s) carry no rank: the logs cannot tell which rank the others "
                f"waited for")
    if len(ranks) == 1:
        return (f"only rank {ranks[0]}'s wait is in the logs"
                + (f" (of {world} ranks)" if world else "")
                + ": one rank's lines cannot tell which peer it waited for")
    per = _timeouts_by_pg(b)
    seqs = sorted({x[0] for g in per.values() for x in g.values()})
    same = f" at SeqNum {seqs[0]}" if len(seqs) == 1 else ""
    done = sorted({_int(e.fields.get("last_completed")) for v in b.views.values() for e in v.numbers} - {None})
    lc = f" with last completed work {done[0]}" if len(done) == 1 else ""
    missing = [r for r in range(world or 0) if r not in b.views or not (b.views[r].waits or b.views[r].comm_errors)]
    tail = ""
    if world and missing:
        tail = (f"; {len(missing)} of {world} ranks left no line about it, too many (or too few ranks reported) "
                f"to tell a stuck rank from lines missing from the logs")
    if capped:
        tail += "; some capture rules were capped"
    return (f"{_ranks_text(ranks)} all timed out waiting{same}{lc}: no rank is behind the others in what "
            f"the logs show{tail}")
