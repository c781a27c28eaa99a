"""What a chunk-parallel scan worker makes of a chunk's hits for extraction: each
hit's facts (`hitfacts.chunk_facts`: timestamp, uptime, rank, carried timestamp,
printing host), and, for the hits whose evidence is already past its cap, only
what they add to their group's `event_repeats` row (`GroupCounts`): one entry per
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
and extraction neither decodes their lines nor builds their events nor counts
them one by one.  The key and group come from the phase's own `resolved` (the code
`_emit` runs), so they cannot differ.  Runs in the forked worker; depends on the
phase only through `resolved` and `emit_plan`.
"""
from __future__ import annotations

from typing import Any, Sequence

from rulekit.extract.hitfacts import chunk_facts
from rulekit.rules.model import AccumulatorRule

# the rule index of a group's entry for its hits past their cap in a chunk: (start, end, LEFT_OUT, group) at
# the first of them; its facts entry is (count, first line, last line, last timestamp, its line), lines from
# the chunk's first (0), the timestamp the last truthy one (None, line -1: none)
LEFT_OUT = -1
MAX_PAST = 200_000  # evidence past its cap remembered at most (then forgotten at once)


class WorkerHits:
    """`annotate` for `parallel_scan`: (chunk, hits, news) -> (hits sent, (facts, their lines in the
    chunk, carried after, the chunk's newlines)) (`chunk_facts`)."""

    def __init__(self, phase: Any, obs: Any, rules: Sequence[Any], year: int | None, hosts: bool):
        self.phase = phase
        self.obs = obs
        self.rules = rules
        self.year = year
        self.hosts = hosts  # read printing hosts (False: the observation declares its node)
        self.keys: set[tuple] = set()  # keys past the repeat cap
        self.groups: set[tuple] = set()  # groups past the group cap
        self._plans: list[Any] = [None] * len(rules)  # rule index -> the phase's emit plan (None: not yet; False: an accumulator)
        self._counts = GroupCounts()  # the chunk's hits past their cap, per group
        # (rule index, captured values, rank, host) -> its group, for evidence known to be past a cap
        # (a cap once reached stays reached: a hit of the same evidence is left out on one lookup)
        self._past: dict[tuple, tuple] = {}

    def __call__(self, chunk: bytes, hits: list, news: list[tuple[int, tuple]] | None) -> tuple[list, tuple]:
        for kind, k in news or ():
            (self.keys if kind == 0 else self.groups).add(k)
        leave_out = None  # (no cap reached yet: every hit whole)
        if self.keys or self.groups:
            self._counts = GroupCounts()
            leave_out = self._leave_out
        sent, facts, lines, after, newlines = chunk_facts(chunk, hits, self.year, self.hosts, leave_out)
        return sent, (facts, lines, after, newlines)

    def _leave_out(self, hit: tuple, line: str, rank: Any, host: Any, ts: Any, num: int) -> tuple | None:
        """None for a hit to send whole; for an extractor hit past its cap, what its group's
        entry is given (`GroupCounts.add`)."""
        idx, caps = hit[2], hit[3]
        memo = (idx, tuple(caps.values()), rank, host)
        group = self._past.get(memo)
        if group is None:
            plan = self._plans[idx]
            if plan is None:
                isacc = isinstance(self.rules[idx], AccumulatorRule)  # (an accumulator runs in extraction, on every trigger)
                plan = self._plans[idx] = False if isacc else self.phase.emit_plan(self.rules[idx])
            if plan is False:
                return None
            _values, _symptom, _node, group, key, _rank = self.phase.resolved(plan, self.obs, line, caps, rank, host)
            if key not in self.keys and group not in self.groups:
                return None
            if len(self._past) >= MAX_PAST:
                self._past.clear()
            self._past[memo] = group
        return self._counts.add(hit, group, ts, num)


class GroupCounts:
    """A chunk's hits past their cap, counted per group as `ExtractionPhase._left_out`
    of each, in line order, would count them into its `event_repeats` row: the first
    hit of a group becomes the group's entry (see LEFT_OUT), the rest are added to it."""

    def __init__(self) -> None:
        self.groups: dict[tuple, list] = {}

    def add(self, hit: tuple, group: tuple, ts: str | None, line: int) -> tuple:
        """((start, end, LEFT_OUT, group), its entry) for a group's first hit, else `()`
        (hits come in line order; `line`: the hit's, from the chunk's first)."""
        rec = self.groups.get(group)
        if rec is None:
            rec = self.groups[group] = [1, line, line, ts, line if ts else -1]
            return (hit[0], hit[1], LEFT_OUT, group), rec  # (one group tuple per group: pickled once a chunk)
        rec[0] += 1
        rec[2] = line
        if ts:
            rec[3], rec[4] = ts, line
        return ()
