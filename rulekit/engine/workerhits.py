"""What a chunk-parallel scan worker makes of a chunk's hits for extraction: each
hit's facts (`hitfacts.chunk_facts`: timestamp, uptime, rank, carried timestamp,
printing host), and, for a hit whose evidence is already past its cap, only its
cap group and timestamp, the rest of it left out.

The extraction phase records every (rule, type, symptom, node, captures) key
that reaches `repeat_cap` and every (rule, type, symptom, node) group that
reaches `group_cap`, in that order; each worker is told the ones it has not
heard of with its next chunk (`parallel_scan`'s news).  A cap, once reached,
stays reached, so what a worker knows is a part of what extraction knows when it
comes to that chunk: a hit the worker leaves out is one extraction would only
have counted (its `event_repeats` row: count, first and last line, last
timestamp), never one it would have stored.  Those are most of the hits of a long
log, and for them the worker reads no carried timestamp and sends no captures,
and extraction neither decodes their lines nor builds their events.  The key and
group come from the phase's own `resolve` (the code `_emit` runs), so they cannot
differ.  Runs in the forked worker; depends on the phase only through `resolve`
and `emit_plan`.
"""
from __future__ import annotations

from typing import Any, Sequence

from rulekit.extract.hitfacts import INHERIT, TimeCarry, chunk_facts
from rulekit.extract.linectx import host_of, rank_of, timestamp_of
from rulekit.extract.scan import decode_line
from rulekit.rules.model import AccumulatorRule

LEFT_OUT = -1  # a left-out hit's rule index: (start, end, LEFT_OUT, group), its facts entry its timestamp
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
        self._plans: list[Any] = [None] * len(rules)  # rule index -> the phase's emit plan (None: accumulator)
        # (rule index, captures, rank, host) -> (group, key): what `resolve` answers, a pure function of
        # these for one observation; a hit past its cap is the same evidence again, so this is asked often
        self._resolved: dict[tuple, tuple[tuple, tuple]] = {}

    def __call__(self, chunk: bytes, hits: list, news: list[tuple[int, tuple]] | None) -> tuple[list, tuple]:
        for kind, k in news or ():
            (self.keys if kind == 0 else self.groups).add(k)
        if not self.keys and not self.groups:  # nothing past a cap yet: every hit as it is
            return hits, chunk_facts(chunk, hits, self.year, self.hosts)
        year, hosts, rules, obs = self.year, self.hosts, self.rules, self.obs
        keys, groups, phase, plans, resolved = self.keys, self.groups, self.phase, self._plans, self._resolved
        if len(resolved) > MAX_RESOLVED:
            resolved.clear()
        carry = TimeCarry(year, INHERIT)
        out_hits: list = []
        out_facts: list = []
        last = -1
        line = ""
        ts = uptime = rank = host = f = None
        for h in hits:
            start, end, idx, caps = h
            if start != last:  # a line's facts are read once, for all its hits
                last = start
                line = decode_line(chunk[start:end])
                ts, uptime = timestamp_of(line, year)
                rank = rank_of(line)
                host = host_of(line) if hosts else None
                if ts is None:
                    carry.advance(chunk, start)  # (parsed only if a stored hit asks: `carry.ts`)
                carry.saw(ts, end)
                f = None
            plan = plans[idx]
            if plan is None and not isinstance(rules[idx], AccumulatorRule):
                plan = plans[idx] = phase.emit_plan(rules[idx])
            if plan is not None:
                memo = (idx, tuple(caps.values()), rank, host)
                got = resolved.get(memo)
                if got is None:
                    got = resolved[memo] = phase.resolve(plan, obs, line, caps, rank, host)[3:5]
                group, key = got
                if key in keys or group in groups:
                    out_hits.append((start, end, LEFT_OUT, group))  # (one tuple per group: pickled once a chunk)
                    out_facts.append(ts)
                    continue
            if f is None:
                f = (ts, uptime, rank, carry.ts if ts is None else None, host)
            out_hits.append(h)
            out_facts.append(f)
        return out_hits, (out_facts, carry.ts)
