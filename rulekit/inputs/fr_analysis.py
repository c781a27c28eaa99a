"""Cross-rank matching of flight-recorder dumps: which collective is stuck in each
process group, which ranks it waits for, and which collectives do not match.

Per process group (the `process_group` name, the same on every member): each
member's progress is its last completed, started and enqueued collective
sequence id (from `pg_status` and the entries; a `retired` entry completed,
and so did everything older than the oldest entry the ring buffer kept).
The stuck collective is the earliest one some member has not completed while
another member reached it.  At that sequence id every member is, from least to
most progress: without a dump, not reached (never enqueued it), scheduled,
started, completed.  The members with less progress than most are the group's
culprits when they are behind the majority's state (those that reached it
must be a minority, those without a dump at most half; a group where nobody
is behind the majority names nobody).

Across groups the culprits are the ranks nothing else explains: a rank named
in one group that is itself waiting (not a culprit) in a stuck collective of
another group whose culprits are known is blocked there, not at fault; the
culprits left are the sinks of that wait-for graph.

Point-to-point operations (`nccl:send 0->1`, `nccl:recv 1<-0`, local ranks of the
group) that did not complete wait for their peer when the peer has no dump or
never posted the matching operation.

Mismatches (a workload bug): at one sequence id of one group, members whose
op, input / output sizes or dtypes differ from the majority's.

Pure functions over `FRDump` records; no I/O, no events, no rules.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import field
from typing import Any, Iterable, Mapping

from rulekit.rules.records import dataclass
from rulekit.inputs.flight_recorder import FRDump

# progress levels at the stuck sequence id, least first
NO_DUMP, NOT_REACHED, SCHEDULED, STARTED, COMPLETED = range(5)
LEVEL_NAMES = ("no_dump", "not_reached", "scheduled", "started", "completed")
MAX_MISMATCHES = 20


def op_type(profiling_name: str) -> str:
    """`nccl:all_reduce` -> `all_reduce`; `nccl:send 0->1` -> `send`."""
    return profiling_name.split(":", 1)[-1].split(" ", 1)[0]


def _uneven(op: str, root_side: str) -> bool:
    """Sizes that legitimately differ between ranks: splits, variable sizes, and the
    root side of scatter (inputs) / gather (outputs)."""
    return op.startswith("all_to_all") or op.endswith("_v") or "coalesced" in op or op == root_side


@dataclass
class _Progress:
    completed: int = 0
    started: int = 0
    enqueued: int = 0
    entries: dict[int, dict[str, Any]] = field(default_factory=dict)  # collective seq -> entry (last seen)
    p2p: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class StuckCollective:
    group: str
    desc: str
    kind: str  # collective | p2p
    seq: int
    op: str
    input_sizes: list[list[int]]
    output_sizes: list[list[int]]
    members: list[int]
    states: dict[str, list[int]]  # level name -> ranks
    culprits: list[int]
    waiting: list[int]
    reason: str
    frames: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "desc": self.desc, "kind": self.kind, "seq": self.seq, "op": self.op,
                "input_sizes": self.input_sizes, "output_sizes": self.output_sizes, "members": len(self.members),
                **{k: v for k, v in self.states.items()}, "culprits": self.culprits, "waiting": self.waiting,
                "reason": self.reason, "frames": self.frames}


@dataclass
class Mismatch:
    group: str
    desc: str
    seq: int
    what: str  # op | sizes | dtypes
    expected: dict[str, Any]
    ranks: list[int]  # the minority
    found: dict[int, dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "desc": self.desc, "seq": self.seq, "what": self.what,
                "expected": self.expected, "ranks": self.ranks,
                "found": {str(r): v for r, v in sorted(self.found.items())}}


@dataclass
class FRAnalysis:
    dump_ranks: list[int]
    missing_dumps: list[int]
    stuck: list[StuckCollective]
    culprit_ranks: list[int]
    blocked: dict[int, str]  # named in some group but waiting elsewhere -> why
    mismatches: list[Mismatch]
    reason: str
    culprit_why: dict[int, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"dump_ranks": self.dump_ranks, "missing_dumps": self.missing_dumps,
                "culprit_ranks": self.culprit_ranks,
                "culprit_why": {str(r): w for r, w in sorted(self.culprit_why.items())},
                "stuck": [s.to_dict() for s in self.stuck],
                "blocked": {str(r): w for r, w in sorted(self.blocked.items())},
                "mismatches": [m.to_dict() for m in self.mismatches], "reason": self.reason}


def ranges(ranks: Iterable[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5'."""
    rs = sorted(set(ranks))
    out: list[str] = []
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        out.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    return ",".join(out)


def _groups(dumps: Mapping[int, FRDump], world_size: int | None) -> dict[str, dict[str, Any]]:
    """pg name -> {desc, members (set), progress {rank: _Progress}}."""
    groups: dict[str, dict[str, Any]] = {}

    def group(name: str, desc: str = "") -> dict[str, Any]:
        g = groups.setdefault(name, {"desc": desc, "members": set(), "configured": False, "progress": {}})
        if desc and not g["desc"]:
            g["desc"] = desc
        return g

    for rank, d in dumps.items():
        for name, c in d.pg_config.items():
            g = group(name, c.get("desc", ""))
            if c.get("ranks"):
                g["members"].update(c["ranks"])
                g["configured"] = True
        local: dict[str, str] = {}
        for e in d.entries:
            g = group(e["pg"], e["pg_desc"])
            g["members"].add(rank)
            if e.get("pg_id") is not None:
                local[str(e["pg_id"])] = e["pg"]
            p = g["progress"].setdefault(rank, _Progress())
            if e["is_p2p"]:
                p.p2p.append(e)
                continue
            seq = e["collective_seq_id"]
            p.entries[seq] = e
            p.enqueued = max(p.enqueued, seq)
            if e["state"] == "completed" or e["retired"]:
                p.completed = max(p.completed, seq)
                p.started = max(p.started, seq)
            elif e["state"] == "started":
                p.started = max(p.started, seq)
        for pid, s in d.pg_status.items():
            name = local.get(pid) or (pid if pid in groups else None)
            if name is None:
                continue
            p = groups[name]["progress"].setdefault(rank, _Progress())
            groups[name]["members"].add(rank)
            p.completed = max(p.completed, s.get("last_completed_collective", 0))
            p.started = max(p.started, s.get("last_started_collective", 0), p.completed)
            p.enqueued = max(p.enqueued, s.get("last_enqueued_collective", 0), p.started)
    for g in groups.values():
        for p in g["progress"].values():
            if p.entries:  # what the ring buffer dropped (older than its oldest entry) had completed
                p.completed = max(p.completed, min(p.entries) - 1)
                p.started = max(p.started, p.completed)
    if world_size:
        for name, g in groups.items():
            if g["desc"] == "default_pg" and not g["configured"]:
                g["members"].update(range(world_size))
    return groups


def _level(p: _Progress | None, seq: int) -> int:
    if p is None:
        return NO_DUMP
    if p.completed >= seq:
        return COMPLETED
    if p.started >= seq or (seq in p.entries and p.entries[seq]["state"] == "started"):
        return STARTED
    if p.enqueued >= seq:
        return SCHEDULED
    return NOT_REACHED


def _timing(dump: FRDump) -> bool:
    """Whether the rank records kernel starts (TORCH_NCCL_ENABLE_TIMING): then an entry
    left `scheduled` never started on the GPU."""
    return any(e["state"] == "started" for e in dump.entries) or \
        any(s.get("last_started_collective", -1) > 0 for s in dump.pg_status.values())


def _pending_before(dump: FRDump, entry: dict[str, Any] | None) -> str | None:
    """The earliest entry of the rank's dump before `entry` that did not complete (its
    GPU stream is still on it), as text; None when nothing earlier is pending."""
    if entry is None:
        return None
    for e in dump.entries:
        if e is entry:
            return None
        if e["state"] != "completed" and not e["retired"]:
            kind = f"p2p {e['profiling_name']}" if e["is_p2p"] else f"collective {e['collective_seq_id']} ({e['profiling_name']})"
            return f"{kind} of pg {e['pg']}"
    return None


def _stuck_collective(name: str, g: dict[str, Any], dumps: Mapping[int, FRDump]) -> StuckCollective | None:
    prog: dict[int, _Progress] = {r: p for r, p in g["progress"].items() if r in dumps}
    if not prog:
        return None
    members = sorted(g["members"] | set(prog))
    seq = min(p.completed for p in prog.values()) + 1
    if not any(p.enqueued >= seq for p in prog.values()):
        return None  # every member finished all it enqueued: idle, not stuck
    levels = {r: (_level(prog[r], seq) if r in prog else NOT_REACHED if r in dumps else NO_DUMP) for r in members}
    states = {LEVEL_NAMES[lv]: sorted(r for r, x in levels.items() if x == lv) for lv in range(5)}
    states = {k: v for k, v in states.items() if v}
    entry = next((p.entries[seq] for p in prog.values() if seq in p.entries), None)
    op = entry["profiling_name"] if entry else "?"
    counts = Counter(levels.values())
    majority = max(counts, key=lambda lv: (counts[lv], lv))
    behind_all = sorted(r for r, x in levels.items() if x < majority)
    # with timing on, a rank only scheduled because its GPU stream is still on an earlier
    # collective waits there; one with nothing earlier pending has a stuck GPU
    queued: dict[int, str] = {}
    gpu_stuck: list[int] = []
    for r in members:
        if levels[r] != SCHEDULED or not _timing(dumps[r]):
            continue
        q = _pending_before(dumps[r], prog[r].entries.get(seq))
        if q:
            queued[r] = q
        else:
            gpu_stuck.append(r)
    if len(gpu_stuck) > 1 and len(gpu_stuck) == len([r for r in members if r in dumps]):
        gpu_stuck = []  # every GPU of the group "stuck": not a signal
    behind = sorted(set(r for r in behind_all if r not in queued) | set(gpu_stuck))
    culprits: list[int] = []
    dumped = [r for r in members if r in dumps]
    missing = [r for r in behind if levels[r] == NO_DUMP]
    reached = [r for r in behind if levels[r] >= SCHEDULED and r not in gpu_stuck]
    where = f"collective {seq} ({op}) of pg {name}{' (' + g['desc'] + ')' if g['desc'] else ''}"
    if not behind:
        reason = (f"{where}: no rank is behind the {counts[majority]} {LEVEL_NAMES[majority].replace('_', ' ')} "
                  f"one(s) of {len(members)} member(s)")
        if queued:
            reason += "; " + "; ".join(f"rank {r} is still on {q}" for r, q in sorted(queued.items()))
    elif len(missing) > max(1, len(members) // 2):
        reason = f"{where}: {len(missing)} of {len(members)} member(s) left no dump: too few dumps to name a culprit"
    elif reached and len(reached) * 2 >= len(dumped):
        reason = f"{where}: {len(reached)} of {len(dumped)} member(s) are behind: not a minority, no culprit named"
    else:
        culprits = behind
        what = {NO_DUMP: "left no dump (the process died or its dump was lost)",
                NOT_REACHED: "never reached it", SCHEDULED: "scheduled it but never started it",
                STARTED: "started it but never completed it"}
        parts = [f"rank(s) {ranges(rs)} {what[lv]}" for lv in range(COMPLETED)
                 if (rs := [r for r in behind if levels[r] == lv])]
        if gpu_stuck:
            parts.append(f"nothing else was pending on the GPU of rank(s) {ranges(gpu_stuck)}")
        reason = (f"{where}: {'; '.join(parts)} while {counts[majority]} rank(s) "
                  f"{LEVEL_NAMES[majority].replace('_', ' ')} it")
    waiting = sorted(r for r, x in levels.items() if x in (SCHEDULED, STARTED) and r not in culprits and r not in queued)
    return StuckCollective(name, g["desc"], "collective", seq, op, entry["input_sizes"] if entry else [],
                           entry["output_sizes"] if entry else [], members, states, culprits, waiting, reason,
                           entry["frames"] if entry else [])


def _p2p_peer(e: dict[str, Any], members: list[int]) -> tuple[str, int, int] | None:
    """(send|recv, global src, global dst) of a p2p entry."""
    parts = e["profiling_name"].split(":", 1)[-1].split(" ")
    if len(parts) != 2:
        return None
    kind, meta = parts
    try:
        if kind == "send":
            s, d = (int(x) for x in meta.split("->"))
        elif kind == "recv":
            d, s = (int(x) for x in meta.split("<-"))
        else:
            return None
    except ValueError:
        return None
    if not (0 <= s < len(members) and 0 <= d < len(members)):
        return None
    return kind, members[s], members[d]


def _stuck_p2p(name: str, g: dict[str, Any], dumps: Mapping[int, FRDump]) -> list[StuckCollective]:
    members = sorted(g["members"])
    out: list[StuckCollective] = []
    posted: Counter = Counter()  # (kind, src, dst, by rank) -> count
    for r, p in g["progress"].items():
        for e in p.p2p:
            pd = _p2p_peer(e, members)
            if pd:
                posted[(pd[0], pd[1], pd[2], r)] += 1
    seen = set()
    for r, p in sorted(g["progress"].items()):
        for e in p.p2p:
            if e["state"] == "completed" or e["retired"]:
                continue
            pd = _p2p_peer(e, members)
            if not pd:
                continue
            kind, s, d = pd
            peer = d if kind == "send" else s
            if peer == r or (r, peer) in seen:
                continue
            seen.add((r, peer))
            other = "recv" if kind == "send" else "send"
            mine = posted[(kind, s, d, r)]
            theirs = posted[(other, s, d, peer)]
            if peer not in dumps:
                culprits, why = [peer], f"rank {peer} left no dump"
            elif theirs < mine:
                culprits, why = [peer], f"rank {peer} posted {theirs} matching {other}(s) for {mine} {kind}(s)"
            else:
                culprits, why = [], f"rank {peer} posted the matching {other}: both wait"
            desc = f" ({g['desc']})" if g["desc"] else ""
            out.append(StuckCollective(name, g["desc"], "p2p", e.get("p2p_seq_id") or 0, e["profiling_name"],
                                       e["input_sizes"], e["output_sizes"], [r, peer],
                                       {"started" if e["state"] == "started" else "scheduled": [r]}, culprits, [r],
                                       f"{e['profiling_name']} on rank {r} of pg {name}{desc} did not complete: {why}",
                                       e["frames"]))
    return out


def _mismatches(name: str, g: dict[str, Any]) -> list[Mismatch]:
    prog: dict[int, _Progress] = g["progress"]
    seqs = sorted({s for p in prog.values() for s in p.entries})
    out: list[Mismatch] = []
    for seq in seqs:
        have = {r: p.entries[seq] for r, p in prog.items() if seq in p.entries}
        if len(have) < 2:
            continue
        for what, key in (("op", lambda e: op_type(e["profiling_name"])),
                          ("sizes", lambda e: (None if _uneven(op_type(e["profiling_name"]), "scatter")
                                               else repr(e["input_sizes"]),
                                               None if _uneven(op_type(e["profiling_name"]), "gather")
                                               else repr(e["output_sizes"]))),
                          ("dtypes", lambda e: (repr(sorted(set(e["input_dtypes"]))), repr(sorted(set(e["output_dtypes"])))))):
            if what == "dtypes" and not all(e["input_dtypes"] or e["output_dtypes"] for e in have.values()):
                continue
            votes = Counter(key(e) for e in have.values())
            if len(votes) < 2:
                continue
            (top, n), (_, n2) = votes.most_common(2)
            majority = top if n > n2 else None
            odd = sorted(r for r, e in have.items() if majority is None or key(e) != majority)
            ref = next(e for r, e in sorted(have.items()) if r not in odd) if majority is not None else None
            out.append(Mismatch(name, g["desc"], seq, what,
                                {"op": ref["profiling_name"], "input_sizes": ref["input_sizes"],
                                 "output_sizes": ref["output_sizes"], "input_dtypes": ref["input_dtypes"],
                                 "ranks": sorted(r for r in have if r not in odd)} if ref else {},
                                odd, {r: {"op": have[r]["profiling_name"], "input_sizes": have[r]["input_sizes"],
                                          "output_sizes": have[r]["output_sizes"],
                                          "input_dtypes": have[r]["input_dtypes"]} for r in odd}))
            break  # one finding per sequence id: the op first, then sizes, then dtypes
        if len(out) >= MAX_MISMATCHES:
            break
    return out


def analyze(dumps: Mapping[int, FRDump] | Iterable[FRDump], world_size: int | None = None) -> FRAnalysis:
    """The analysis of one job's dumps (by rank).  `world_size` (from the job's rank
    map) lets the default group name the ranks that left no dump."""
    if not isinstance(dumps, Mapping):
        dumps = {d.rank: d for d in dumps if d.rank is not None}
    dumps = {int(r): d for r, d in dumps.items() if r is not None}
    groups = _groups(dumps, world_size)
    world = set().union(*(g["members"] for g in groups.values())) if groups else set()
    if world_size:
        world |= set(range(world_size))
    stuck: list[StuckCollective] = []
    mismatches: list[Mismatch] = []
    for name in sorted(groups, key=lambda n: (len(groups[n]["members"]) * -1, n)):
        g = groups[name]
        s = _stuck_collective(name, g, dumps)
        if s is not None:
            stuck.append(s)
        stuck.extend(_stuck_p2p(name, g, dumps))
        mismatches.extend(_mismatches(name, g))
    named: dict[int, list[StuckCollective]] = {}
    for s in stuck:
        for r in s.culprits:
            named.setdefault(r, []).append(s)
    blocked: dict[int, str] = {}
    for r in named:
        for s in stuck:
            if s.culprits and r in s.waiting and r not in s.culprits:
                blocked[r] = (f"waits in {s.op} (collective {s.seq}) of pg {s.group} for rank(s) {ranges(s.culprits)}"
                              if s.kind == "collective" else f"waits in {s.op} of pg {s.group} for rank(s) {ranges(s.culprits)}")
                break
    culprits = sorted(r for r in named if r not in blocked)
    reason = ""
    if named and not culprits:  # every named rank waits elsewhere: a cycle; keep them all
        culprits = sorted(named)
        blocked = {}
        reason = "the stuck collectives wait for each other; every named rank is kept"
    why = {r: named[r][0].reason for r in culprits}
    if not stuck:
        reason = reason or "no process group has a collective some rank did not complete"
    elif not culprits:
        reason = reason or "; ".join(s.reason for s in stuck[:3])
    else:
        reason = reason or f"rank(s) {ranges(culprits)}: " + named[culprits[0]][0].reason
    return FRAnalysis(sorted(dumps), sorted(world - set(dumps)), stuck, culprits, blocked, mismatches, reason, why)
