"""Cross-rank analysis of flight-recorder dumps: which ranks a hang waits for, and
only those whose own progress stopped first.

1. Epochs (`split_epochs`).  Restart attempts may leave their dumps in one
   folder (a restarted job overwrites only the ranks that dump again).  Dumps
   of one attempt agree: no two of one rank; in a process group they share, no
   rank completed a collective another never enqueued; and their entries
   overlap in time (no rank's first kept entry is later than every other's
   last one: a restart begins only after its previous attempt stopped).  Dumps are placed, latest first, into the first
   epoch they agree with; each epoch is analysed alone.
2. Per process group (PyTorch's `process_group` name and its ranks), each
   member's progress is its oldest, last completed, started and enqueued
   collective (`FRDump.progress`).  The stuck collective is the first one some
   dumped member has not completed while a member reached it.  There each member
   is, least progress first: `no_dump`, `not_reached` (never enqueued it),
   `scheduled`, `started`, `completed`.
3. The wait-for graph.  The members that reached the stuck collective wait in it
   for the ones that *lag*: without a dump, not reached, or (when the group
   records kernel starts) scheduled but not started.  A lagging rank is a
   culprit only if its own progress stopped there:
   - no dump: its process died or hung past dumping (not named when more than
     half the members left none: too little to go on);
   - not reached, and nothing of its own pending anywhere: its program stopped
     issuing collectives;
   - scheduled, not started, and nothing pending before it: its GPU never ran it.
   A lagging rank with an op of its own pending earlier (in any group) is
   *blocked* there: a victim, whatever that op's group shows.  A stuck
   collective no member lags in (all reached it, none completed it) is stuck
   *inside*: the dumps cannot single out one of its members (`undecided`, for
   the rules to settle with device evidence).
   A rank whose own log says its last op failed because a peer closed the
   connection (a flight recorder marks a failed op retired, like a completed
   one) did not stop of itself: the members of that op's group that left no
   dump did.  Groups no dump configures (gloo) get the ranks without a dump by
   the size of their siblings (`_infer_members`).
4. Point-to-point ops (`nccl:send 0->1`, `nccl:recv 1<-0`, group-local ranks)
   that did not complete wait for their peer when the peer left no dump or
   posted fewer matching ops; the peer is a culprit only if nothing of its own
   is pending.
5. Mismatches (a workload bug): at one sequence id of one group, the members
   whose op, sizes or dtypes differ from the majority's (the first
   `MAX_MISMATCHES`, a limit reported when hit).

Pure functions over `FRDump` columns; no I/O, no events, no rules.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import field
from itertools import compress
from typing import Any, Iterable, Mapping

from rulekit.rules.records import dataclass
from rulekit.inputs.flight_recorder import COMPLETED, STARTED, FRDump, group_mask, sig_values

# progress levels at the stuck sequence id, least first
NO_DUMP, NOT_REACHED, SCHEDULED, STARTED_L, COMPLETED_L = range(5)
LEVEL_NAMES = ("no_dump", "not_reached", "scheduled", "started", "completed")
MAX_MISMATCHES = 20
CLOCK_SKEW_NS = 1_000_000_000  # clocks of two hosts of one job may differ by this much


def op_type(profiling_name: str) -> str:
    """`nccl:all_reduce` -> `all_reduce`; `nccl:send 0->1` -> `send`."""
    return profiling_name.split(":", 1)[-1].split(" ", 1)[0]


def _uneven(op: str, root_side: str) -> bool:
    """Sizes that legitimately differ between ranks: splits, variable sizes, and the
    root side of scatter (inputs) / gather (outputs)."""
    return op.startswith("all_to_all") or op.endswith("_v") or "coalesced" in op or op == root_side


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
    lagging: list[int] = field(default_factory=list)  # every rank it waits for (culprits and blocked ones)
    inside: bool = False  # no member lags: stuck inside the op itself

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "desc": self.desc, "kind": self.kind, "seq": self.seq, "op": self.op,
                "input_sizes": self.input_sizes, "output_sizes": self.output_sizes, "members": len(self.members),
                **{k: v for k, v in self.states.items()}, "culprits": self.culprits, "waiting": self.waiting,
                "lagging": self.lagging, "inside": self.inside, "reason": self.reason, "frames": self.frames}


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
    blocked: dict[int, str]  # lagging somewhere but waiting on an earlier op of its own -> where
    mismatches: list[Mismatch]
    reason: str
    culprit_why: dict[int, str] = field(default_factory=dict)
    undecided: list[StuckCollective] = field(default_factory=list)  # stuck inside: no member lags
    epoch: int = 0
    t_first: int | None = None
    t_last: int | None = None
    stopped_at: dict[int, int] = field(default_factory=dict)  # culprit with a dump -> its last activity (ns)
    limits: list[dict[str, Any]] = field(default_factory=list)  # {limit, value, what}
    earlier: list["FRAnalysis"] = field(default_factory=list)  # the analyses of earlier epochs (oldest first)
    duplicates: list[str] = field(default_factory=list)  # dumps left out: the same as another of their rank

    def to_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "dump_ranks": self.dump_ranks, "missing_dumps": self.missing_dumps,
                "t_first": self.t_first, "t_last": self.t_last,
                "culprit_ranks": self.culprit_ranks,
                "culprit_why": {str(r): w for r, w in sorted(self.culprit_why.items())},
                "stopped_at": {str(r): t for r, t in sorted(self.stopped_at.items())},
                "stuck": [s.to_dict() for s in self.stuck],
                "undecided": [{"group": s.group, "desc": s.desc, "seq": s.seq, "op": s.op, "members": s.members,
                               "reason": s.reason} for s in self.undecided],
                "blocked": {str(r): w for r, w in sorted(self.blocked.items())},
                "mismatches": [m.to_dict() for m in self.mismatches], "reason": self.reason,
                "limits": self.limits, "duplicates": self.duplicates}


# ---- epochs ---------------------------------------------------------------------------------------


def _same(a: FRDump, b: FRDump) -> bool:
    """Two dumps of one rank with the same content (the same file twice)."""
    return (a.rank == b.rank and a.t_first == b.t_first and a.t_last == b.t_last and len(a) == len(b)
            and a.progress == b.progress and a.seq == b.seq and a.state == b.state)


def _members(d: FRDump, name: str) -> tuple[int, ...] | None:
    c = d.pg_config.get(name)
    return tuple(sorted(set(c["ranks"]))) if c and c.get("ranks") else None


class _Epoch:
    """One attempt's dumps so far, with what a newcomer is checked against in time linear
    in its own groups (not in the dumps already in): the ranks in, the latest end and
    earliest start, and per (group, its ranks) the least enqueued and the most completed
    collective of its members."""

    def __init__(self) -> None:
        self.dumps: list[FRDump] = []
        self.by_rank: dict[int, FRDump] = {}
        self.last: int | None = None
        self.first: int | None = None
        self.bounds: dict[tuple, list[int]] = {}  # (pg name, ranks) -> [least enqueued, most completed]

    def agrees(self, d: FRDump, keys: dict[str, tuple]) -> bool:
        """Whether `d` is of this attempt: a rank not in it yet, overlapping it in time (no
        rank's kept history begins after every other rank of its attempt had stopped: a
        restart begins after the last one stopped), and in each group it shares with a
        member, it completed nothing that member never enqueued nor the reverse."""
        if not self.dumps:
            return True
        if d.t_first is not None and self.last is not None and d.t_first > self.last + CLOCK_SKEW_NS:
            return False
        if d.t_last is not None and self.first is not None and self.first > d.t_last + CLOCK_SKEW_NS:
            return False
        if d.rank in self.by_rank:
            return False
        for name, (_, done, _, enq) in d.progress.items():
            b = self.bounds.get(keys[name])
            if b is not None and (done > b[0] or b[1] > enq):
                return False
        return True

    def add(self, d: FRDump, keys: dict[str, tuple]) -> None:
        self.dumps.append(d)
        self.by_rank.setdefault(d.rank, d)  # type: ignore[arg-type]
        if d.t_last is not None:
            self.last = d.t_last if self.last is None else max(self.last, d.t_last)
        if d.t_first is not None:
            self.first = d.t_first if self.first is None else min(self.first, d.t_first)
        for name, (_, done, _, enq) in d.progress.items():
            b = self.bounds.get(keys[name])
            if b is None:
                self.bounds[keys[name]] = [enq, done]
            else:
                b[0], b[1] = min(b[0], enq), max(b[1], done)


def split_epochs(dumps: Iterable[FRDump]) -> tuple[list[list[FRDump]], list[str]]:
    """The dumps of each restart attempt (oldest attempt first), and the dumps left out
    as copies of another of their rank."""
    ordered = sorted((d for d in dumps if d.rank is not None and d.rank >= 0),
                     key=lambda d: (d.t_last if d.t_last is not None else -1, d.rank, d.where), reverse=True)
    epochs: list[_Epoch] = []
    duplicates: list[str] = []
    for d in ordered:
        keys = {name: (name, _members(d, name)) for name in d.progress}
        for ep in epochs:
            twin = ep.by_rank.get(d.rank)  # type: ignore[arg-type]
            if twin is not None and _same(twin, d):
                duplicates.append(d.where)
                break
            if ep.agrees(d, keys):
                ep.add(d, keys)
                break
        else:
            epochs.append(_Epoch())
            epochs[-1].add(d, keys)
    epochs.reverse()
    return [ep.dumps for ep in epochs], duplicates


# ---- groups and progress -----------------------------------------------------------------------


@dataclass
class _Group:
    name: str
    desc: str = ""
    members: set[int] = field(default_factory=set)
    configured: bool = False
    progress: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)  # rank -> (oldest, done, started, enq)
    index: dict[int, int] = field(default_factory=dict)  # rank -> its group index in the dump
    timing: bool = False  # some member records kernel starts


def _groups(dumps: Mapping[int, FRDump], world_size: int | None) -> dict[tuple, _Group]:
    """(pg name, ranks or None) -> _Group, from every dump's pg_config, progress and entries."""
    groups: dict[tuple, _Group] = {}
    ranked: dict[str, list[tuple]] = {}

    def key(d: FRDump, name: str) -> tuple:
        m = _members(d, name)
        return (name, m)

    for rank, d in dumps.items():
        names = {g[0]: g[1] for g in d.groups}
        timing = STARTED in d.state or any(s.get("last_started_collective", -1) > 0 for s in d.pg_status.values())
        for name in {*d.pg_config, *names, *d.progress}:
            k = key(d, name)
            g = groups.get(k)
            if g is None:
                g = groups[k] = _Group(name)
                if k[1] is not None:
                    ranked.setdefault(name, []).append(k)
            c = d.pg_config.get(name)
            g.desc = g.desc or (c or {}).get("desc") or names.get(name, "")
            if k[1] is not None:
                g.members.update(k[1])
                g.configured = True
            if name in names or name in d.progress:
                g.members.add(rank)
            if name in d.progress:
                g.progress[rank] = d.progress[name]
                g.timing = g.timing or timing
            gi = next((i for i, grp in enumerate(d.groups) if grp[0] == name), None)
            if gi is not None:
                g.index[rank] = gi
    # a group some dumps name without its ranks is the one group of that name with ranks, if one
    for k in [k for k in groups if k[1] is None]:
        targets = ranked.get(k[0], [])
        if len(targets) == 1:
            g, into = groups.pop(k), groups[targets[0]]
            into.members |= g.members
            into.progress.update({r: p for r, p in g.progress.items() if r not in into.progress})
            into.index.update({r: i for r, i in g.index.items() if r not in into.index})
            into.timing = into.timing or g.timing
            into.desc = into.desc or g.desc
    if world_size:
        for g in groups.values():
            if g.desc == "default_pg" and not g.configured:
                g.members.update(range(world_size))
        _infer_members(groups, dumps, world_size)
    return groups


def _infer_members(groups: dict[tuple, _Group], dumps: Mapping[int, FRDump], world_size: int) -> None:
    """Members of groups no dump configures (gloo's dumps carry no `pg_config`): a rank
    without a dump is known nowhere.  Groups of one description (TP, DP, ...) have one
    size; a group short of it by as many ranks as there are ranks without a dump in no
    group of that description gets them."""
    silent = [r for r in range(world_size) if r not in dumps]
    if not silent:
        return
    by_desc: dict[str, list[_Group]] = {}
    for g in groups.values():
        if not g.configured and g.desc and g.desc != "default_pg":
            by_desc.setdefault(g.desc, []).append(g)
    for desc, gs in by_desc.items():
        size = max(len(g.members) for g in gs)
        placed = set().union(*(g.members for g in gs))
        free = [r for r in silent if r not in placed]
        short = [g for g in gs if len(g.members) < size]
        if free and len(short) == 1 and size - len(short[0].members) == len(free):
            short[0].members.update(free)


def _level(p: tuple[int, int, int, int] | None, seq: int, dumped: bool) -> int:
    if not dumped:
        return NO_DUMP
    if p is None:
        return NOT_REACHED
    if p[1] >= seq:
        return COMPLETED_L
    if p[2] >= seq:
        return STARTED_L
    if p[3] >= seq:
        return SCHEDULED
    return NOT_REACHED


def _entry_at(d: FRDump, gi: int, seq: int) -> int | None:
    """The index of the rank's last entry of collective `seq` in group index `gi` (a
    coalesced op's entries share it), or None."""
    found = None
    if d.coll:
        tag = gi + 1
        for i in d.pending:
            if d.coll[i] == tag and d.seq[i] == seq:
                found = i if found is None or i > found else found
        if found is not None:
            return found
        pos = d.coll.rfind(tag)
        while pos >= 0:
            s = d.seq[pos]
            if s == seq:
                return pos
            if s < seq:
                return None
            pos = d.coll.rfind(tag, 0, pos)
        return None
    for i in range(len(d) - 1, -1, -1):
        if d.pg[i] == gi and not d.p2p[i] and d.seq[i] == seq:
            return i
    return None


def _earlier_pending(d: FRDump, before: int | None) -> str | None:
    """The first of the rank's own ops still pending before entry `before` (None: any),
    as text; None when nothing earlier is pending."""
    for i in sorted(d.pending):
        if before is not None and i >= before:
            return None
        e = d.pending[i]
        what = f"p2p {e['profiling_name']}" if e["is_p2p"] else \
            f"collective {e['collective_seq_id']} ({e['profiling_name']})"
        return f"{what} of pg {e['pg']}"
    return None


def _where(g: _Group, seq: int, op: str) -> str:
    return f"collective {seq} ({op}) of pg {g.name}{' (' + g.desc + ')' if g.desc else ''}"


def _stuck_collective(g: _Group, dumps: Mapping[int, FRDump], systematic: bool = False,
                      overwritten: frozenset[int] = frozenset()) -> tuple[StuckCollective, dict[int, str]] | None:
    """The group's stuck collective (None: idle) and the lagging ranks blocked on an
    earlier op of their own.  `systematic`: most ranks of the job have a GPU that never
    started their stuck collective with nothing earlier pending, so that is not one
    GPU's fault (see `_gpu_stalls`).  `overwritten`: ranks whose dump of this attempt a
    later attempt replaced; they left one, so they are never named for leaving none."""
    prog = {r: p for r, p in g.progress.items() if r in dumps}
    if not prog:
        return None
    members = sorted(g.members | set(prog))
    seq = min(p[1] for p in prog.values()) + 1
    if not any(p[3] >= seq for p in prog.values()):
        return None  # every member finished all it enqueued: idle, not stuck
    levels = {r: _level(prog.get(r), seq, r in dumps) for r in members}
    states = {LEVEL_NAMES[lv]: sorted(r for r, x in levels.items() if x == lv) for lv in range(5)}
    states = {k: v for k, v in states.items() if v}
    at = {r: _entry_at(dumps[r], g.index[r], seq) for r in prog if r in g.index}
    ref = next(((r, i) for r, i in sorted(at.items()) if i is not None), None)
    entry = dumps[ref[0]].entry(ref[1]) if ref else None
    op = entry["profiling_name"] if entry else "?"
    where = _where(g, seq, op)
    dumped = [r for r in members if r in dumps]
    missing = [r for r in members if levels[r] == NO_DUMP]
    gpu_lag = [r for r in members if levels[r] == SCHEDULED and g.timing]
    lagging = sorted([r for r in members if levels[r] in (NO_DUMP, NOT_REACHED)] + gpu_lag)
    blocked: dict[int, str] = {}
    culprits: list[int] = []
    gpu_stuck: list[int] = []
    for r in lagging:
        if levels[r] == NO_DUMP:
            continue
        q = _earlier_pending(dumps[r], at.get(r) if levels[r] == SCHEDULED else None)
        if q:
            blocked[r] = q
        elif levels[r] == SCHEDULED:
            gpu_stuck.append(r)
        else:
            culprits.append(r)
    notes = []
    if gpu_stuck and systematic:
        notes.append(f"the GPU of rank(s) {ranges(gpu_stuck)} never started it, but neither did those of most ranks "
                     "of the job: not one GPU's fault")
        gpu_stuck = []
    culprits += gpu_stuck
    lost = [r for r in missing if r in overwritten]
    if lost:
        notes.append(f"the dump(s) of rank(s) {ranges(lost)} were replaced by a later attempt's")
        missing = [r for r in missing if r not in overwritten]
    if missing and len(missing) > max(1, len(members) // 2):
        notes.append(f"{len(missing)} of {len(members)} member(s) left no dump: too few dumps to name those")
    elif missing:
        culprits += missing
    culprits.sort()
    waiting = sorted(r for r, x in levels.items() if x in (SCHEDULED, STARTED_L) and r not in lagging)
    inside = not lagging and bool(waiting)
    what = {NO_DUMP: "left no dump (the process died or its dump was lost)",
            NOT_REACHED: "never reached it, with nothing of its own pending",
            SCHEDULED: "scheduled it, and its GPU never started it with nothing earlier pending"}
    parts = [f"rank(s) {ranges(rs)} {what[lv]}" for lv in (NO_DUMP, NOT_REACHED, SCHEDULED)
             if (rs := [r for r in culprits if levels[r] == lv])]
    parts += [f"rank {r} is still on {q}" for r, q in sorted(blocked.items())]
    if inside:
        parts.append(f"every member reached it and none completed it ({len(waiting)} waiting): the dumps cannot "
                     "single out one member")
    elif not lagging:
        parts.append("no rank lags behind the others")
    reason = f"{where}: {'; '.join(parts + notes)}"
    if waiting and not inside:
        reason += f"; {len(waiting)} rank(s) wait in it"
    return StuckCollective(g.name, g.desc, "collective", seq, op, entry["input_sizes"] if entry else [],
                           entry["output_sizes"] if entry else [], members, states, culprits, waiting, reason,
                           entry["frames"] if entry else [], lagging, inside), blocked


def _gpu_stalls(groups: Mapping[tuple, _Group], dumps: Mapping[int, FRDump]) -> set[int]:
    """Ranks whose GPU never started their group's stuck collective (the group records
    kernel starts) although nothing of theirs is pending before it."""
    out: set[int] = set()
    for g in groups.values():
        prog = {r: p for r, p in g.progress.items() if r in dumps}
        if not g.timing or not prog:
            continue
        seq = min(p[1] for p in prog.values()) + 1
        for r, p in prog.items():
            if _level(p, seq, True) == SCHEDULED and r in g.index and \
                    _earlier_pending(dumps[r], _entry_at(dumps[r], g.index[r], seq)) is None:
                out.add(r)
    return out


def _p2p_peer(name: str, members: list[int]) -> tuple[str, int, int] | None:
    """(send|recv, global src, global dst) of a p2p op's profiling name."""
    parts = name.split(":", 1)[-1].split(" ")
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


def _posted(d: FRDump, gi: int, members: list[int]) -> Counter:
    """(send|recv, src, dst) -> how many such p2p ops the rank's buffer holds in group index gi."""
    out: Counter = Counter()
    mask = map(bool, d.p2p)
    ids = Counter(s for s, g in zip(compress(d.sig, mask), compress(d.pg, map(bool, d.p2p))) if g == gi)
    for sid, n in ids.items():
        pd = _p2p_peer(sig_values(d.sigs[sid])[0], members)
        if pd:
            out[pd] += n
    return out


def _stuck_p2p(g: _Group, dumps: Mapping[int, FRDump]) -> tuple[list[StuckCollective], dict[int, str]]:
    members = sorted(g.members)
    out: list[StuckCollective] = []
    blocked: dict[int, str] = {}
    seen = set()
    posted: dict[int, Counter] = {}

    def count(r: int) -> Counter:
        if r not in posted:
            posted[r] = _posted(dumps[r], g.index[r], members) if r in g.index else Counter()
        return posted[r]

    for r in sorted(g.index):
        d = dumps[r]
        for i in sorted(d.pending):
            e = d.pending[i]
            if not e["is_p2p"] or d.pg[i] != g.index[r]:
                continue
            pd = _p2p_peer(e["profiling_name"], members)
            if not pd:
                continue
            kind, s, dst = pd
            peer = dst if kind == "send" else s
            if peer == r or (r, peer) in seen:
                continue
            seen.add((r, peer))
            other = "recv" if kind == "send" else "send"
            mine, theirs = count(r)[(kind, s, dst)], (count(peer)[(other, s, dst)] if peer in dumps else 0)
            culprits: list[int] = []
            lag: list[int] = []
            if peer not in dumps:
                lag, culprits, why = [peer], [peer], f"rank {peer} left no dump"
            elif theirs < mine:
                lag = [peer]
                q = _earlier_pending(dumps[peer], None)
                if q:
                    blocked[peer] = q
                    why = f"rank {peer} posted {theirs} matching {other}(s) for {mine} {kind}(s) and is still on {q}"
                else:
                    culprits = [peer]
                    why = f"rank {peer} posted {theirs} matching {other}(s) for {mine} {kind}(s)"
            else:
                why = f"rank {peer} posted the matching {other}: both wait"
            desc = f" ({g.desc})" if g.desc else ""
            out.append(StuckCollective(g.name, g.desc, "p2p", e.get("p2p_seq_id") or 0, e["profiling_name"],
                                       e["input_sizes"], e["output_sizes"], [r, peer],
                                       {"started" if e["state"] == "started" else "scheduled": [r]}, culprits, [r],
                                       f"{e['profiling_name']} on rank {r} of pg {g.name}{desc} did not complete: {why}",
                                       e["frames"], lag, not lag))
    return out, blocked


def _sigs_by_seq(d: FRDump, gi: int) -> dict[int, bytes]:
    """seq -> signature blob of the rank's (last) entry of each collective of group index gi."""
    if d.coll:
        mask = group_mask(d.coll, gi)
    else:
        mask = bytes(g == gi and not p for g, p in zip(d.pg, d.p2p))
    return dict(zip(compress(d.seq, mask), map(d.sigs.__getitem__, compress(d.sig, mask))))


class _Run:
    """One rank's signatures of one group's collectives: a dense run (seq -> blob by
    offset) or, for a buffer with gaps or coalesced ops, a dict."""

    def __init__(self, d: FRDump, gi: int):
        run = d.runs.get(gi)
        if run is not None:
            self.first = run[0]
            self.blobs: list[bytes] | None = list(map(d.sigs.__getitem__, run[1]))
            self.by_seq: dict[int, bytes] | None = None
            self.last = self.first + len(self.blobs) - 1
        else:
            self.blobs = None
            self.by_seq = _sigs_by_seq(d, gi)
            self.first = min(self.by_seq, default=0)
            self.last = max(self.by_seq, default=-1)

    def get(self, seq: int) -> bytes | None:
        if self.blobs is not None:
            return self.blobs[seq - self.first] if self.first <= seq <= self.last else None
        return self.by_seq.get(seq)  # type: ignore[union-attr]

    def differ(self, ref: "_Run") -> list[int]:
        """The seqs both hold where this rank's signature is not the reference's."""
        lo, hi = max(self.first, ref.first), min(self.last, ref.last)
        if lo > hi:
            return []
        if self.blobs is not None and ref.blobs is not None:
            a = self.blobs[lo - self.first:hi - self.first + 1]
            b = ref.blobs[lo - ref.first:hi - ref.first + 1]
            if a == b:
                return []
            return list(compress(range(lo, hi + 1), map(bytes.__ne__, a, b)))
        return [s for s in range(lo, hi + 1) if (x := self.get(s)) is not None and (y := ref.get(s)) is not None
                and x != y]


def _mismatches(g: _Group, dumps: Mapping[int, FRDump], budget: list[int]) -> list[Mismatch]:
    ranks = sorted(r for r in g.index if r in dumps)
    if len(ranks) < 2:
        return []
    runs = {r: _Run(dumps[r], g.index[r]) for r in ranks}
    ref = max(ranks, key=lambda r: (runs[r].last - runs[r].first, -r))
    split: set[int] = set()
    for r in ranks:
        if r != ref:
            split.update(runs[r].differ(runs[ref]))
    out: list[Mismatch] = []
    for seq in sorted(split):
        have = {r: sig_values(b) for r in ranks if (b := runs[r].get(seq)) is not None}
        for what, key in (("op", lambda v: op_type(v[0])),
                          ("sizes", lambda v: (None if _uneven(op_type(v[0]), "scatter") else repr(v[1]),
                                               None if _uneven(op_type(v[0]), "gather") else repr(v[2]))),
                          ("dtypes", lambda v: (repr(sorted(set(v[3]))), repr(sorted(set(v[4])))))):
            if what == "dtypes" and not all(v[3] or v[4] for v in have.values()):
                continue
            votes = Counter(key(v) for v in have.values())
            if len(votes) < 2:
                continue
            if budget[0] <= 0:
                budget[1] += 1
                break
            budget[0] -= 1
            (top, n), (_, n2) = votes.most_common(2)
            majority = top if n > n2 else None
            odd = sorted(r for r, v in have.items() if majority is None or key(v) != majority)
            usual = next((v for r, v in sorted(have.items()) if r not in odd), None) if majority is not None else None
            out.append(Mismatch(g.name, g.desc, seq, what,
                                {"op": usual[0], "input_sizes": usual[1], "output_sizes": usual[2],
                                 "input_dtypes": usual[3], "ranks": sorted(r for r in have if r not in odd)}
                                if usual else {},
                                odd, {r: {"op": have[r][0], "input_sizes": have[r][1], "output_sizes": have[r][2],
                                          "input_dtypes": have[r][3]} for r in odd}))
            break  # one finding per sequence id: the op first, then sizes, then dtypes
    return out


def _dead_peers(groups: Mapping[tuple, _Group], dumps: Mapping[int, FRDump], peer_errors: Iterable[int]
                ) -> dict[int, tuple[StuckCollective, str]]:
    """rank with a peer error -> (its last op, naming the members of that op's group that
    left no dump, when they are at most half of it; why the rank is not a culprit)."""
    out: dict[int, tuple[StuckCollective, str]] = {}
    for p in sorted(set(peer_errors) & set(dumps)):
        d = dumps[p]
        if not len(d):
            continue
        last = len(d) - 1
        gi = d.pg[last]
        g = next((g for g in groups.values() if g.index.get(p) == gi), None)
        if g is None:
            continue
        dead = sorted(m for m in g.members if m not in dumps)
        if not dead or len(dead) > max(1, len(g.members) // 2):
            continue
        e = d.entry(last)
        what = f"{e['profiling_name']} ({'p2p' if e['is_p2p'] else 'collective ' + str(e['collective_seq_id'])}) " \
               f"of pg {g.name}{' (' + g.desc + ')' if g.desc else ''}"
        reason = (f"{what}: rank(s) {ranges(dead)} left no dump, and rank {p}'s op with them failed (its log: a "
                  "peer closed the connection or exited)")
        out[p] = (StuckCollective(g.name, g.desc, "p2p" if e["is_p2p"] else "collective", e["collective_seq_id"],
                                  e["profiling_name"], e["input_sizes"], e["output_sizes"], sorted(g.members),
                                  {"no_dump": dead, "failed": [p]}, dead, [p], reason, e["frames"], dead),
                  f"its own {what} failed: a peer closed the connection or exited")
    return out


def analyze_epoch(dumps: Mapping[int, FRDump], world_size: int | None = None, epoch: int = 0,
                  peer_errors: Iterable[int] = (), overwritten: Iterable[int] = ()) -> FRAnalysis:
    """The analysis of one attempt's dumps (by rank; see the module docstring).
    `peer_errors`: ranks whose own log says their last op failed because a peer closed
    the connection or exited (a flight recorder marks a failed op retired, like a
    completed one): such a rank did not stop of itself, and the members of that op's
    group that left no dump did.  `overwritten`: ranks whose dump of this attempt a later
    attempt's replaced (not named for leaving none)."""
    groups = _groups(dumps, world_size)
    replaced = frozenset(overwritten) - set(dumps)
    world = set().union(*(g.members for g in groups.values())) if groups else set()
    if world_size:
        world |= set(range(world_size))
    stuck: list[StuckCollective] = []
    blocked: dict[int, str] = {}
    mismatches: list[Mismatch] = []
    budget = [MAX_MISMATCHES, 0]  # findings left, findings past the limit
    systematic = len(_gpu_stalls(groups, dumps)) * 2 > len(dumps)
    for key in sorted(groups, key=lambda k: (-len(groups[k].members), k[0], k[1] or ())):
        g = groups[key]
        got = _stuck_collective(g, dumps, systematic, replaced)
        if got is not None:
            s, b = got
            stuck.append(s)
            blocked.update(b)
        p2p, b = _stuck_p2p(g, dumps)
        stuck.extend(p2p)
        blocked.update(b)
        mismatches.extend(_mismatches(g, dumps, budget))
    named: dict[int, StuckCollective] = {}
    for s in stuck:
        for r in s.culprits:
            named.setdefault(r, s)
    failed = _dead_peers(groups, dumps, peer_errors)
    for p, (s, _) in failed.items():
        named.pop(p, None)
        for r in s.culprits:
            named.setdefault(r, s)
        stuck.append(s)
    culprits = sorted(named)
    blocked = {r: f"waits on its own {q}" for r, q in blocked.items() if r not in named}
    blocked.update({p: why for p, (_, why) in failed.items() if p not in named})
    undecided = [s for s in stuck if s.inside and s.kind == "collective"]
    why = {r: named[r].reason for r in culprits}
    if not stuck:
        reason = "no process group has a collective some rank did not complete"
    elif culprits:
        reason = f"rank(s) {ranges(culprits)}: " + named[culprits[0]].reason
    else:
        reason = "; ".join(s.reason for s in stuck[:3])
    stopped = {r: dumps[r].t_last for r in culprits if r in dumps and dumps[r].t_last is not None}
    limits = []
    if budget[1]:
        limits.append({"limit": "max_mismatches", "value": MAX_MISMATCHES,
                       "what": f"{budget[1]} more mismatched collective(s) were not listed"})
    times = [d.t_first for d in dumps.values() if d.t_first is not None]
    ends = [d.t_last for d in dumps.values() if d.t_last is not None]
    return FRAnalysis(sorted(dumps), sorted(world - set(dumps)), stuck, culprits, blocked, mismatches, reason, why,
                      undecided, epoch, min(times) if times else None, max(ends) if ends else None, stopped, limits)


def analyze(dumps: Mapping[int, FRDump] | Iterable[FRDump], world_size: int | None = None,
            peer_errors: Iterable[int] = ()) -> FRAnalysis:
    """The analysis of one job's dumps: of its latest attempt, with the earlier ones in
    `earlier` (see the module docstring).  `world_size` (from the job's rank map) lets the
    default group name the ranks that left no dump."""
    items = list(dumps.values()) if isinstance(dumps, Mapping) else list(dumps)
    epochs, duplicates = split_epochs(items)
    if not epochs:
        return FRAnalysis([], sorted(range(world_size or 0)), [], [], {}, [], "no dump names its rank",
                          duplicates=duplicates)
    errors = set(peer_errors)
    later = [set().union(*({d.rank for d in e} for e in epochs[i + 1:])) for i in range(len(epochs))]
    out = [analyze_epoch({d.rank: d for d in ep}, world_size, i, errors if i == len(epochs) - 1 else (),  # type: ignore[misc]
                         later[i]) for i, ep in enumerate(epochs)]
    last = out[-1]
    last.earlier = out[:-1]
    last.duplicates = duplicates
    return last
