"""What a chunk-parallel scan worker makes of a chunk's hits for extraction: each
hit's facts (`hitfacts.chunk_facts`: timestamp, uptime, rank, carried timestamp,
printing host), and, for the hits whose evidence is already past its cap, only
what they add to their group's `event_repeats` row (`left_out`): one entry per
group and chunk, the rest of them left out.

The extraction phase records every (rule, type, symptom, node, captures) key
that reaches `repeat_cap` and every (rule, type, symptom, node) group that
reaches `group_cap`, in that order; each worker is told the ones it has not
heard of with its next chunk (`parallel_scan`'s news).  A cap, once reached,
stays reached, so what a worker knows is a part of what extraction knows when it
comes to that chunk: a hit the worker leaves out is one extraction would only
have counted (its `event_repeats` row: count, first and last line, last
timestamp), never one it would have stored.  Those are most of the hits of a long
log, and for them the worker reads no carried timestamp and sends no captures,
and extraction neither decodes their lines nor builds their events nor counts them
one by one.  The key and
group come from the phase's own `resolve` (the code `_emit` runs), so they cannot
differ.  Runs in the forked worker; depends on the phase only through `resolve`
and `emit_plan`.
"""
from __future__ import annotations

from typing import Any, Sequence

from rulekit.extract.hitfacts import chunk_facts
from rulekit.rules.model import AccumulatorRule

# the rule index of a group's entry for its hits past their cap in a chunk: (start, end, LEFT_OUT, group) at
# the first of them; its facts entry is (count, first line, last line, last timestamp, its line), lines from
# the chunk's first (0), the timestamp the last truthy one (None, line -1: none)
LEFT_OUT = -1
MAX_RESOLVED = 200_000  # answers of `resolve` remembered at most (then forgotten at once)


class WorkerHits:
    """`annotate` for `parallel_scan`: (chunk, hits, news) -> (hits sent, (facts, carried after))."""

    def __init__(self, phase: Any, obs: Any, rules: Sequence[Any], year: int | None, hosts: bool):
        self.phase = phase
        self.obs = obs
        self.rules = rules
        self.year = year
        self.hosts = hosts  # read printing hosts (False: the observation declares its node)
        self.keys: set[tuple] = set()  # keys past the repeat cap
        self.groups: set[tuple] = set()  # groups past the group cap
        self._plans: list[Any] = [None] * len(rules)  # rule index -> the phase's emit plan (None: not yet; False: an accumulator)
        # (rule index, captures, rank, host) -> (group, key, past a cap, caps heard of then): what `resolve`
        # answers, a pure function of these for one observation, and its verdict, which holds for good once
        # past a cap (a cap stays reached) and otherwise until more caps are heard of; a hit past its cap is
        # the same evidence again, so this is asked often
        self._resolved: dict[tuple, tuple[tuple, tuple, bool, int]] = {}
        self._heard = 0  # caps heard of

    def __call__(self, chunk: bytes, hits: list, news: list[tuple[int, tuple]] | None) -> tuple[list, tuple]:
        for kind, k in news or ():
            (self.keys if kind == 0 else self.groups).add(k)
            self._heard += 1
        if len(self._resolved) > MAX_RESOLVED:
            self._resolved.clear()
        leave_out = self._leave_out if self.keys or self.groups else None  # (no cap reached yet: every hit whole)
        sent, facts, after = chunk_facts(chunk, hits, self.year, self.hosts, leave_out)
        if leave_out is not None:
            sent, facts = left_out(chunk, sent, facts)
        return sent, (facts, after)

    def _leave_out(self, hit: tuple, line: str, rank: Any, host: Any) -> tuple | None:
        """(start, end, LEFT_OUT, group) for an extractor hit past its cap, else None."""
        start, end, idx, caps = hit
        plan = self._plans[idx]
        if plan is None:
            isacc = isinstance(self.rules[idx], AccumulatorRule)  # (accumulators are not capped)
            plan = self._plans[idx] = False if isacc else self.phase.emit_plan(self.rules[idx])
        if plan is False:
            return None
        memo = (idx, tuple(caps.values()), rank, host)
        got = self._resolved.get(memo)
        if got is None or (not got[2] and got[3] != self._heard):
            group, key = self.phase.resolve(plan, self.obs, line, caps, rank, host)[3:5] if got is None else got[:2]
            got = self._resolved[memo] = (group, key, key in self.keys or group in self.groups, self._heard)
        if got[2]:
            return (start, end, LEFT_OUT, got[0])  # (one group tuple per group: pickled once a chunk)
        return None


def left_out(chunk: bytes, hits: list, facts: list) -> tuple[list, list]:
    """`hits` and `facts` with each group's stand-ins (`_leave_out`'s, facts entry its
    timestamp) made one entry at the first of them (see LEFT_OUT): what counting each,
    in line order, into its `event_repeats` row would add (`ExtractionPhase._left_out_many`)."""
    out_hits: list = []
    out_facts: list = []
    groups: dict[tuple, list] = {}
    line = pos = 0
    for h, f in zip(hits, facts):
        if h[2] != LEFT_OUT:
            out_hits.append(h)
            out_facts.append(f)
            continue
        start = h[0]
        line += chunk.count(b"\n", pos, start)
        pos = start
        rec = groups.get(h[3])
        if rec is None:
            rec = groups[h[3]] = [1, line, line, f, line if f else -1]
            out_hits.append(h)
            out_facts.append(rec)
        else:
            rec[0] += 1
            rec[2] = line
            if f:
                rec[3], rec[4] = f, line
    return out_hits, out_facts
