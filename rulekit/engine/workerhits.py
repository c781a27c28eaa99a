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
`_emit` runs), so they cannot differ.  The trigger of an accumulator that reads its
line alone (`max_lines < 1`: an extractor written in Python) is run here too, by
the phase's own `line_only_groups` (the code `_start_accumulator` and `add_spec`
run), and left out when it makes no event or its one event is past its cap; one
that reads following lines runs in extraction, on every trigger.  Runs in the
forked worker; depends on the phase only through `resolved`, `emit_plan` and
`line_only_groups`.
"""
from __future__ import annotations

from typing import Any, Sequence

from rulekit.engine.explained import ROLE_EXPLAINS, ROLE_FALLBACK
from rulekit.extract.hitfacts import chunk_facts
from rulekit.rules.model import AccumulatorRule

# the rule index of a group's entry for its hits past their cap in a chunk: (start, end, LEFT_OUT, group) at
# the first of them; its facts entry is (count, first line, last line, last timestamp, its line), lines from
# the chunk's first (0), the timestamp the last truthy one (None, line -1: none)
LEFT_OUT = -1
LINE_ONLY = object()  # the plan of an accumulator that reads its trigger line alone (`max_lines < 1`)
MAX_PAST = 200_000  # evidence past its cap remembered at most (then forgotten at once)


class WorkerHits:
    """`annotate` for `parallel_scan`: (chunk, hits, news) -> (hits sent, (facts, their lines in the
    chunk, carried after, the chunk's newlines, its last hit line's end)) (`chunk_facts`)."""

    def __init__(self, phase: Any, obs: Any, rules: Sequence[Any], year: int | None, hosts: bool):
        self.phase = phase
        self.obs = obs
        self.rules = rules
        self.year = year
        self.hosts = hosts  # read printing hosts (False: the observation declares its node)
        self.keys: set[tuple] = set()  # keys past the repeat cap
        self.groups: set[tuple] = set()  # groups past the group cap
        self._plans: list[Any] = [None] * len(rules)  # rule index -> the phase's emit plan (None: not yet; False: an accumulator)
        self._roles = phase.roles(rules)  # what each rule's hit says of its line (`phases.rule_role`)
        # the line being read and whether it is explained: True, False, or None (a line-only
        # accumulator that only extraction can run decides): a fallback's hit on an explained
        # line is dropped here as extraction would drop it, on an undecided one sent whole
        self._line = -1
        self._explained: bool | None = False
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
        sent, facts, lines, after, newlines, last_end = chunk_facts(chunk, hits, self.year, self.hosts, leave_out)
        return sent, (facts, lines, after, newlines, last_end)

    def _leave_out(self, hit: tuple, line: str, rank: Any, host: Any, ts: Any, num: int) -> tuple | None:
        """None for a hit to send whole; for an extractor hit past its cap, what its group's
        entry is given (`GroupCounts.add`); a line-only accumulator's trigger: `_line_only`;
        a fallback's on a line another rule explained: nothing (`()`)."""
        idx, caps = hit[2], hit[3]
        if hit[0] != self._line:
            self._line, self._explained = hit[0], False
        role = self._roles[idx]
        if role is ROLE_FALLBACK:
            if self._explained is None:
                return None  # extraction decides
            if self._explained:
                return ()
        elif role is ROLE_EXPLAINS:
            self._explained = True
        plan = self._plans[idx]
        if plan is None:
            rule = self.rules[idx]
            if isinstance(rule, AccumulatorRule):  # one reading following lines runs in extraction, on every trigger
                plan = self._plans[idx] = LINE_ONLY if rule.max_lines < 1 else False
            else:
                plan = self._plans[idx] = self.phase.emit_plan(rule)
        if plan is False:
            return None
        if plan is LINE_ONLY:
            return self._line_only(hit, line, rank, host, ts, num)
        memo = (idx, tuple(caps.values()), rank, host)
        group = self._past.get(memo)
        if group is None:
            _values, _symptom, _node, group, key, _rank = self.phase.resolved(plan, self.obs, line, caps, rank, host)
            if key not in self.keys and group not in self.groups:
                return None
            if len(self._past) >= MAX_PAST:
                self._past.clear()
            self._past[memo] = group
        return self._counts.add(hit, group, ts, num)

    def _line_only(self, hit: tuple, line: str, rank: Any, host: Any, ts: Any, num: int) -> tuple | None:
        """A line-only accumulator's trigger (`max_lines < 1`): run here as extraction would
        run it (`phase.line_only_groups`); left out when it makes no event, or one event
        past its cap (counted as an extractor hit's), else sent whole."""
        got = self.phase.line_only_groups(self.rules[hit[2]], self.obs, line, hit[3], rank, host, ts)
        if self._roles[hit[2]] is not ROLE_FALLBACK and self._explained is not True:
            self._explained = None if got is None else (True if got else self._explained)
        if got is None or len(got) > 1:
            return None
        if not got:
            return ()  # no event: nothing to send
        group, key, ts = got[0]
        if key not in self.keys and group not in self.groups:
            return None
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
