"""The five attribution phases, each an object with `apply(state)` that records
what it touched in the trace:

1. Extraction — extractors and extractor-accumulators turn observation lines
   into events; the stream is write-only here.
2. Filtering — filter rules by stratum (EARLY < MID < STANDARD < LATE) read and
   write the stream.
3. Refinement — SCRUB per node, aggregate, FINAL job-wide, back-propagate to the
   bad-node events, outcome mapping, POST_OUTCOME.
4. Collection — collectors return JSON-able values.
5. Reporting — the result JSON (`docs/architecture.md`) with its evidence trail.

A rule that raises does not stop attribution: the error is reported in the result.
"""
from __future__ import annotations

import traceback
from functools import partial
from dataclasses import dataclass, field
from typing import Any, Callable

from rulekit.config import DEFAULT_EVIDENCE_MAX, DEFAULT_EVIDENCE_PER_KEY, DEFAULT_REPEAT_CAP
from rulekit.rules.corpus import RuleEngine, ScanPlan
from rulekit.rules.expand import render
from rulekit.inputs.jobinfo import JobInfo
from rulekit.extract.linectx import host_of, rank_of, timestamp_of
from rulekit.rules.model import (
    EMIT_TYPES,
    AccumulatorRule,
    EventSpec,
    ExtractorRule,
    FilterPriority,
    RefinerPriority,
    stratum_of,
)
from rulekit.inputs.observation import Observation
from rulekit.engine.blame import assess, blame_nodes
from rulekit.engine.ordering import TimeCarry, event_order_key
from rulekit.engine.refine import OutcomeDecision, SymptomSet, decide_outcome
from rulekit.rules.registry import SymptomRegistry
from rulekit.extract.scan import decode_line
from rulekit.engine.store import Event, EventManager, EventStream, TraceEntry

# ---- contexts handed to rules -----------------------------------------------------------


@dataclass
class FilterContext:
    event_stream: EventStream
    job: JobInfo
    registry: SymptomRegistry
    rule: str = ""


@dataclass
class RefinerContext:
    symptoms: SymptomSet
    my_bad_nodes: dict[str | None, SymptomSet]
    event_stream: EventStream
    job: JobInfo
    registry: SymptomRegistry
    node: str | None = None
    outcome: OutcomeDecision | None = None
    rule: str = ""


@dataclass
class CollectorContext:
    event_stream: EventStream
    job: JobInfo
    registry: SymptomRegistry
    result: dict[str, Any] = field(default_factory=dict)
    rule: str = ""


@dataclass
class AccumulatorContext:
    rule: str
    source: str
    node: str | None
    rank: int | None
    line_num: int
    job: JobInfo


@dataclass
class AttributionState:
    engine: RuleEngine
    job: JobInfo
    stream: EventStream
    trace: list[TraceEntry]
    decision: OutcomeDecision = field(default_factory=OutcomeDecision)
    node_sets: dict[str | None, SymptomSet] = field(default_factory=dict)
    job_set: SymptomSet | None = None
    collectors: dict[str, Any] = field(default_factory=dict)
    errors: list[dict[str, str]] = field(default_factory=list)

    def run_rule(self, name: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as e:  # a rule's bug: report it, keep attributing
            self.errors.append(rule_error(name, e))
            return None


def rule_error(rule: str, e: BaseException) -> dict[str, str]:
    """A rule's exception as a `rule_errors` entry of the result."""
    tb = traceback.extract_tb(e.__traceback__)
    where = f"{tb[-1].filename}:{tb[-1].lineno}" if tb else ""
    return {"rule": rule, "error": f"{type(e).__name__}: {e}", "where": where}


# ---- phase 1: extraction ----------------------------------------------------------------------


REPEAT_CAP = DEFAULT_REPEAT_CAP  # (EngineOptions.repeat_cap) events kept per (rule, event type, symptom, node, captures); later repeats are aggregated


class ExtractionPhase:
    """Runs extractors and accumulators over one observation; returns events added.

    Bounded memory: the same evidence — one extractor, event type, symptom, node
    and captured values (whatever the rank prefix, timestamp or line) — is
    stored as events up to `repeat_cap` times per job; beyond that each
    observation's repeats are aggregated into one `event_repeats` row (count,
    first and last line, last timestamp) instead of being held."""

    def __init__(self, engine: RuleEngine, manager: EventManager, context_id: int, job: JobInfo,
                 repeat_cap: int = REPEAT_CAP):
        self.engine = engine
        self.manager = manager
        self.context_id = context_id
        self.job = job
        self.year = job.start.year if job.start else None
        self.node_set = set(job.nodes)
        self.added = 0
        self.errors: list[dict[str, str]] = []  # accumulators that raised (reported by every attribute())
        self.repeat_cap = repeat_cap
        self._kept: dict[tuple, int] = {}  # (rule, type, symptom, node) -> events stored
        self._repeats: dict[tuple, list] = {}  # (oc, key) -> [count, first_line, last_line, last_ts] (this observation)

    def resolve_node(self, obs: Observation, line: str) -> tuple[str | None, dict[str, Any]]:
        """The line's node and what the line says of itself (rank, uptime, "_ts");
        the printing host is read only when the node is not declared."""
        ts, uptime = timestamp_of(line, self.year)
        rank = rank_of(line)
        extra: dict[str, Any] = {}
        if rank is not None:
            extra["rank"] = rank
        if uptime is not None:
            extra["uptime"] = uptime
        if ts is not None:
            extra["_ts"] = ts
        if obs.node:
            extra["declared_node"] = obs.node  # the producer said so (syslog/<node>.log, a record's node)
            return obs.node, extra
        if obs.source == "scheduler":
            return None, extra  # the record's own lines: only the node JobInfo names
        host_name = host_of(line)
        if host_name:
            host = self.engine.config.canonical_node(host_name)
            if host and (not self.node_set or host in self.node_set):
                return host, extra
        if rank is not None:
            node = self.job.rank_to_node(rank)
            if node:
                return node, extra
        if len(self.job.nodes) == 1:
            return self.job.nodes[0], extra
        return None, extra

    def apply(self, obs: Observation, progress: Callable[[int], None] | None = None, plan: "ScanPlan | None" = None) -> int:
        """Extract one observation; `plan` restricts the rules (inline tests)."""
        plan = plan or self.engine.scan_plan(obs.source, obs.format)
        oc = self.manager.observation_context(self.context_id, obs.source, obs.format, obs.t_start, obs.t_end, obs.name)
        before = self.added
        line_base = obs.first_line
        active: list[_ActiveAccumulator] = []
        carry = TimeCarry(self.year)
        for chunk in obs.chunks():
            carry.new_chunk()
            if active:
                active = [a for a in active if not a.feed_chunk(chunk, 0, self)]
            hits = plan.scanner.scan(chunk) if plan.rules else []
            counted_pos, counted_line = 0, line_base
            for start, end, idx, caps in hits:
                counted_line += chunk.count(b"\n", counted_pos, start)
                counted_pos = start
                rule = plan.rules[idx]
                line = decode_line(chunk[start:end])
                # the carried timestamp is looked up only for a line without its own
                carried = partial(carry.before, chunk, start)
                if isinstance(rule, AccumulatorRule):
                    acc = self._start_accumulator(rule, obs, line, caps, counted_line, oc, carried)
                    if acc is not None and not acc.feed_chunk(chunk, end + 1, self):
                        active.append(acc)
                    carry.saw(acc.ts if acc is not None else None, end)
                    continue
                carry.saw(self._emit(rule, obs, line, caps, counted_line, oc, carried), end)
            line_base += chunk.count(b"\n")
            if progress:
                progress(len(chunk))
        for acc in active:
            acc.finish(self)
        if self._repeats:
            self.manager.add_repeats([(self.context_id, oc_, rule, etype, sym, node, *agg)
                                      for (oc_, (rule, etype, sym, node, _caps)), agg in self._repeats.items()])
            self._repeats.clear()
        self.manager.flush()
        return self.added - before

    def _emit(self, rule: ExtractorRule, obs: Observation, line: str, caps: dict, line_num: int, oc: int,
              carried: Callable[[], str | None] | None = None) -> str | None:
        """Add the rule's event for one line; returns the line's own timestamp."""
        node, extra = self.resolve_node(obs, line)
        values: dict[str, Any] = dict(rule.lookup)
        values.update({k: v for k, v in caps.items() if v is not None})
        emit = rule.emit
        if emit.node:
            rendered = render(emit.node, values)
            node = self.engine.config.canonical_node(rendered) if rendered else node
        fields = dict(values)
        for k, t in emit.fields:
            fields[k] = render(t, values)
        ts = extra.pop("_ts", None)
        fields.update(extra)
        if ts is None and carried is not None:
            c = carried()
            if c:
                fields["carried_ts"] = c
        symptom = render(emit.symptom, values) if emit.symptom else None
        if symptom:
            symptom = self.engine.registry.canonical(symptom)
        etype = EMIT_TYPES[emit.type].value
        key = (rule.name, etype, symptom, node, tuple(caps.values()))  # the same evidence again (any rank)
        kept = self._kept.get(key, 0)
        if kept >= self.repeat_cap:
            agg = self._repeats.get((oc, key))
            if agg is None:
                self._repeats[(oc, key)] = [1, line_num, line_num, ts]
            else:
                agg[0] += 1
                agg[2], agg[3] = line_num, ts or agg[3]
            return
        self._kept[key] = kept + 1
        payload = {"node": node, "symptom": symptom, "fields": fields}
        self.manager.add(self.context_id, etype, rule.name, oc, ts, line_num, line, node, payload)
        self.added += 1
        return ts

    def _start_accumulator(self, rule: AccumulatorRule, obs: Observation, line: str, caps: dict, line_num: int,
                           oc: int, carried: Callable[[], str | None] | None = None) -> "_ActiveAccumulator | None":
        node, extra = self.resolve_node(obs, line)
        ctx = AccumulatorContext(rule.name, obs.source, node, extra.get("rank"), line_num, self.job)
        acc = _ActiveAccumulator(rule, obs, ctx, oc, extra.get("rank"), line_num, extra.get("_ts"), line)
        acc.carried = carried() if carried is not None and acc.ts is None else None
        try:
            acc.instance = rule.factory(ctx, line, caps)
        except Exception as e:  # the rule's bug: reported, the line is skipped
            self.errors.append(rule_error(rule.name, e))
            return None
        return acc

    def add_spec(self, spec: EventSpec, rule: str, oc: int, default_node: str | None, line_num: int,
                 ts: str | None, datum: str) -> None:
        node = spec.node if spec.node is not None else default_node
        if spec.node is not None:
            node = self.engine.config.canonical_node(spec.node)
        symptom = self.engine.registry.canonical(spec.symptom) if spec.symptom else None
        payload = {"node": node, "symptom": symptom, "fields": dict(spec.fields)}
        etype = EMIT_TYPES[spec.type].value if spec.type in EMIT_TYPES else spec.type
        self.manager.add(self.context_id, etype, rule, oc, spec.timestamp or ts,
                         spec.line_num if spec.line_num is not None else line_num,
                         spec.datum if spec.datum is not None else datum, node, payload)
        self.added += 1


class _ActiveAccumulator:
    """One running accumulator: fed following lines of the same observation (and rank)."""

    def __init__(self, rule: AccumulatorRule, obs: Observation, ctx: AccumulatorContext, oc: int, rank: int | None,
                 line_num: int, ts: str | None, datum: str):
        self.rule = rule
        self.obs = obs
        self.ctx = ctx
        self.oc = oc
        self.rank = rank
        self.line_num = line_num
        self.ts = ts
        self.datum = datum
        self.fed = 0
        self.instance: Any = None
        self.done = False
        self.carried: str | None = None

    def feed_chunk(self, chunk: bytes, pos: int, phase: ExtractionPhase) -> bool:
        """Feed lines from `pos`; True when finished (opted out or max_lines)."""
        from rulekit.extract.linectx import rank_of

        n = len(chunk)
        while pos < n and not self.done:
            nl = chunk.find(b"\n", pos)
            end = n if nl < 0 else nl
            line = decode_line(chunk[pos:end])
            pos = end + 1
            if self.rank is not None:
                r = rank_of(line)
                if r is not None and r != self.rank:
                    continue
            self.fed += 1
            keep = False
            try:
                keep = bool(self.instance.feed(line))
            except Exception as e:  # reported; the accumulator stops and is finalized
                phase.errors.append(rule_error(self.rule.name, e))
                keep = False
            if not keep or self.fed >= self.rule.max_lines:
                self.finish(phase)
        return self.done

    def finish(self, phase: ExtractionPhase) -> None:
        if self.done:
            return
        self.done = True
        try:
            specs = list(self.instance.finalize() or [])
        except Exception as e:  # reported; the accumulator emits nothing
            phase.errors.append(rule_error(self.rule.name, e))
            specs = []
        for spec in specs:
            fields = dict(spec.fields)
            if self.rank is not None:
                fields.setdefault("rank", self.rank)
            if not (spec.timestamp or self.ts) and self.carried:
                fields.setdefault("carried_ts", self.carried)
            spec = EventSpec(spec.type, spec.symptom, spec.node, fields, spec.line_num, spec.timestamp, spec.datum)
            phase.add_spec(spec, self.rule.name, self.oc, self.ctx.node, self.line_num, self.ts, self.datum)


# ---- phase 2: filtering ----------------------------------------------------------------------------


class FilterPhase:
    def apply(self, state: AttributionState) -> None:
        for rule in state.engine.filters:
            stratum = stratum_of(rule.priority, FilterPriority)
            state.stream.phase = f"filter:{stratum.name if stratum else rule.priority}"
            ctx = FilterContext(state.stream, state.job, state.engine.registry, rule.name)
            state.run_rule(rule.name, lambda: rule.func(ctx))


# ---- phase 3: refinement -----------------------------------------------------------------------------


_sort_key = event_order_key  # one explicit order everywhere (rulekit/engine/ordering.py)


class RefinementPhase:
    def apply(self, state: AttributionState) -> None:
        reg = state.engine.registry
        stream = state.stream
        stream.phase = "refine"
        bad = stream.bad_events()
        node_sets: dict[str | None, SymptomSet] = {}
        for e in bad:
            if not e.symptom:
                continue
            s = node_sets.setdefault(e.node, SymptomSet(reg, e.node, state.trace, "refine:SCRUB"))
            s._put(e.symptom, e.node, e.id)
        state.node_sets = node_sets
        scrub = [r for r in state.engine.refiners if r.priority < RefinerPriority.FINAL]
        final = [r for r in state.engine.refiners if RefinerPriority.FINAL <= r.priority < RefinerPriority.POST_OUTCOME]
        post = [r for r in state.engine.refiners if r.priority >= RefinerPriority.POST_OUTCOME]
        stream.read_only = True
        try:
            for node in sorted(node_sets, key=lambda n: (n is None, n or "")):
                for rule in scrub:
                    ctx = RefinerContext(node_sets[node], node_sets, stream, state.job, reg, node=node, rule=rule.name)
                    state.run_rule(rule.name, lambda: rule.func(ctx))
            job_set = self._aggregate(state, "refine:FINAL")
            state.job_set = job_set
            for rule in final:
                ctx = RefinerContext(job_set, node_sets, stream, state.job, reg, rule=rule.name)
                state.run_rule(rule.name, lambda: rule.func(ctx))
        finally:
            stream.read_only = False
        self._back_propagate(state, job_set)
        # outcome mapping on what remains
        job_set = self._aggregate(state, "refine:POST_OUTCOME")
        state.job_set = job_set
        state.decision = decide_outcome(job_set, self._first_events(state))
        stream.read_only = True
        try:
            for rule in post:
                ctx = RefinerContext(job_set, node_sets, stream, state.job, reg, outcome=state.decision, rule=rule.name)
                state.run_rule(rule.name, lambda: rule.func(ctx))
        finally:
            stream.read_only = False
        self._back_propagate(state, job_set)

    def _aggregate(self, state: AttributionState, phase: str) -> SymptomSet:
        job_set = SymptomSet(state.engine.registry, None, state.trace, phase)
        for node, s in state.node_sets.items():
            s.phase = phase
            for sym in s.symptoms():
                for eid in s.event_ids(sym):
                    job_set._put(sym, node, eid)
                if not s.event_ids(sym):
                    job_set._put(sym, node, None)
        return job_set

    def _back_propagate(self, state: AttributionState, job_set: SymptomSet) -> None:
        """Apply symptom removals (job-wide and per node) to the bad-node events."""
        stream = state.stream
        prev = stream.phase
        for node, s in state.node_sets.items():
            for sym in list(s._nodes):
                removal = job_set.removed.get(sym) or s.removed.get(sym)
                if removal is None:
                    continue
                events = [e for e in (stream.get(i) for i in s.event_ids(sym)) if e is not None and e.is_bad]
                stream.phase = job_set.phase if sym in job_set.removed else s.phase
                if removal.action == "discard":
                    stream.discard(events, removal.rule, removal.reason)
                else:
                    stream.demote(events, removal.rule, removal.reason)
                s.removed.setdefault(sym, removal)
        stream.phase = prev

    def _first_events(self, state: AttributionState) -> dict[str, tuple[Any, int, str | None]]:
        out: dict[str, tuple[Any, int, str | None]] = {}
        for e in sorted(state.stream.bad_events(), key=_sort_key):
            if e.symptom and e.symptom not in out:
                out[e.symptom] = (_sort_key(e)[:-1], e.id, e.node)  # the order without the event id
        return out


# ---- phase 4: collection ---------------------------------------------------------------------------------


class CollectionPhase:
    def apply(self, state: AttributionState, partial: dict[str, Any]) -> None:
        state.stream.phase = "collect"
        state.stream.read_only = True
        try:
            for rule in state.engine.collectors:
                ctx = CollectorContext(state.stream, state.job, state.engine.registry, partial, rule.name)
                value = state.run_rule(rule.name, lambda: rule.func(ctx))
                if value is not None:
                    state.collectors[rule.name] = value
        finally:
            state.stream.read_only = False


# ---- phase 5: reporting ------------------------------------------------------------------------------------

EVIDENCE_PER_KEY = DEFAULT_EVIDENCE_PER_KEY  # defaults of EngineOptions.evidence_per_key / evidence_max
EVIDENCE_MAX = DEFAULT_EVIDENCE_MAX


class ReportPhase:
    def apply(self, state: AttributionState) -> dict[str, Any]:
        reg = state.engine.registry
        events = state.stream.node_events()
        interesting: dict[str, list[Event]] = {}
        for e in events:
            if e.node is not None and not e.is_bad:
                interesting.setdefault(e.node, []).append(e)

        def syms(evs: list[Event]) -> list[str]:
            return sorted({e.symptom for e in evs if e.symptom}, key=lambda s: (-reg.rank(s), s))

        d = state.decision
        bad_nodes, affected_nodes, outranked = blame_nodes(events, reg, d, _sort_key,
                                                           state.engine.config.node_domain)
        blamed = {b["node"] for b in bad_nodes}
        for n in outranked:  # node evidence that did not cause a no-fault outcome
            interesting.setdefault(n, [])
        interesting_nodes = [{"node": n, "symptoms": sorted({*syms(interesting[n]), *outranked.get(n, ())},
                                                            key=lambda s: (-reg.rank(s), s))}
                             for n in sorted(interesting) if n not in blamed]
        remaining = state.job_set.symptoms() if state.job_set else []
        root = None
        if d.root_symptom:
            root_events = [e for e in events if e.symptom == d.root_symptom and e.is_bad]
            root_events.sort(key=lambda e: (e.node != d.root_node, _sort_key(e)))
            first = next((e for e in root_events if e.id == d.root_event_id), root_events[0] if root_events else None)
            info = reg.info(d.root_symptom)
            root = {"symptom": d.root_symptom, "node": d.root_node, "rule": first.rule if first else None,
                    "blame": info.blame, "action": info.action,
                    "evidence": [e.to_evidence() for e in root_events[:state.engine.options.evidence_per_key]]}
        confidence, alternatives = assess(d, remaining, reg)
        evidence, dropped = _evidence(events, reg, state.engine.options.evidence_per_key,
                                      state.engine.options.evidence_max)
        result: dict[str, Any] = {
            "job_id": state.job.id,
            "outcome": d.outcome,
            "sub_domain": d.sub_domain,
            "ambiguous": d.ambiguous,
            "confidence": confidence,
            "alternatives": alternatives,
            "root_cause": root,
            "bad_nodes": bad_nodes,
            "affected_nodes": affected_nodes,
            "interesting_nodes": interesting_nodes,
            "symptoms": remaining,
            "collectors": state.collectors,
            "evidence": evidence,
        }
        if dropped:
            result["evidence_omitted"] = dropped
        if d.tied:
            result["tied_symptoms"] = d.tied
        if state.errors:
            result["rule_errors"] = state.errors
        return result


def _evidence(events: list[Event], reg: SymptomRegistry, per_key: int = EVIDENCE_PER_KEY,
              most: int = EVIDENCE_MAX) -> tuple[list[dict[str, Any]], int]:
    """Bad events first (by rank), then interesting ones; a few per (symptom, node)
    (`per_key`), `most` in all (EngineOptions.evidence_per_key / evidence_max)."""
    ordered = sorted(events, key=lambda e: (not e.is_bad, -reg.rank(e.symptom or ""), _sort_key(e)))
    per: dict[tuple, int] = {}
    out = []
    dropped = 0
    for e in ordered:
        key = (e.event_type, e.symptom, e.node)
        per[key] = per.get(key, 0) + 1
        if per[key] > per_key or len(out) >= most:
            dropped += 1
            continue
        out.append(e.to_evidence())
    return out, dropped

