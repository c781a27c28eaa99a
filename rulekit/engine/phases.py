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

A rule that raises, calls sys.exit() or runs past its time budget does not stop
attribution: the error is reported in the result's `rule_errors` (the Session
runs rule code contained: `rulekit.rules.containment`).
"""
from __future__ import annotations

import json
import traceback
from functools import partial
from dataclasses import field
from typing import Any, Callable, Iterator, Mapping

from rulekit.rules.records import dataclass
from rulekit.config import (
    DEFAULT_CLOCK_SKEW_SECONDS,
    DEFAULT_EVIDENCE_MAX,
    DEFAULT_EVIDENCE_PER_KEY,
    DEFAULT_GROUP_CAP,
    DEFAULT_REPEAT_CAP,
    ENV_RULE_TIMEOUT,
)
from rulekit.rules.containment import RuleTimeout
from rulekit.rules.corpus import RuleEngine, ScanPlan
from rulekit.rules.expand import render
from rulekit.inputs.fleet import FleetContext
from rulekit.inputs.jobinfo import JobInfo
from rulekit.extract.linectx import host_of, rank_line_finder, rank_of, timestamp_of
from rulekit.rules.model import (
    AccumulatorRule,
    EventSpec,
    ExtractorRule,
    FilterPriority,
    RefinerPriority,
    event_type_name,
    stratum_of,
)
from rulekit.inputs.observation import Observation
from rulekit.engine.blame import CERTAIN_BLAMES, assess, blame_nodes, blame_of, resource_blames, root_action
from rulekit.engine.explained import ROLE_EXPLAINS, ROLE_FALLBACK, ROLE_LINE_ONLY, drop_explained, rule_role
from rulekit.engine.gcpolicy import fewer_collections
from rulekit.engine.ordering import event_order_key, first_in_order
from rulekit.engine.timeline import year_hint
from rulekit.engine.refine import OutcomeDecision, SymptomSet, decide_outcome
from rulekit.rules.registry import SymptomRegistry
from rulekit.extract.hitfacts import INHERIT, CarryJoin, Tail, TimeCarry
from rulekit.extract.parallel import parallel_scan, scan_workers
from rulekit.engine.workerhits import LEFT_OUT, WorkerHits
from rulekit.extract.scan import CHUNK_SIZE, rule_text, rule_text_cut
from rulekit.engine.store import Event, EventManager, EventStream, TraceEntry
from rulekit.engine.storeorder import Slot, StoreOrder


def _line_facts(into: dict[str, Any], rank: int | None, uptime: Any, obs: Observation) -> dict[str, Any]:
    """Add what a line says of itself (rank, uptime) and the node its producer declared
    (syslog/<node>.log, a record's node) to an event's fields; returns `into`."""
    if rank is not None:
        into["rank"] = rank
    if uptime is not None:
        into["uptime"] = uptime
    if obs.node:
        into["declared_node"] = obs.node
    return into


# ---- contexts handed to rules -----------------------------------------------------------


class LimitsHit(list):
    """The limits hit while attributing that may change the verdict: the result's
    `limits_hit`, one `{"limit", "value", "what"}` (and the `rule` that reported it)
    per limit; `hit()` adds one (a limit reported twice is kept once)."""

    def hit(self, limit: str, value: Any, what: str, rule: str | None = None) -> None:
        entry = {"limit": limit, "value": value, "what": what}
        if rule:
            entry["rule"] = rule
        if entry not in self:
            self.append(entry)


@dataclass
class FilterContext:
    event_stream: EventStream
    job: JobInfo
    registry: SymptomRegistry
    rule: str = ""
    selects: tuple = ()  # the rule's declared Selections
    dumps: tuple = ()  # flight-recorder dumps ingested as data (`rulekit.inputs.flight_recorder.FRDump`)
    limits: LimitsHit = field(default_factory=LimitsHit)
    clock_skew: float = DEFAULT_CLOCK_SKEW_SECONDS  # GlobalConfig.clock_skew_seconds (docs/time.md)
    fleet: FleetContext | None = None  # the fleet's memory of the job's nodes (None: no store)

    def limit_hit(self, limit: str, value: Any, what: str) -> None:
        """Report a limit this rule hit that may change the verdict (the result's `limits_hit`)."""
        self.limits.hit(limit, value, what, self.rule)

    def selected(self) -> list[Event]:
        """The events the filter declared it reads (`selects=`), in id order."""
        if not self.selects:
            raise ValueError(f"filter {self.rule}: selected() needs selects=Selection.of(...) in its declaration")
        return self.event_stream.select(*self.selects)


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
    clock_skew: float = DEFAULT_CLOCK_SKEW_SECONDS  # GlobalConfig.clock_skew_seconds (docs/time.md)
    fleet: FleetContext | None = None


@dataclass
class CollectorContext:
    event_stream: EventStream
    job: JobInfo
    registry: SymptomRegistry
    result: dict[str, Any] = field(default_factory=dict)
    rule: str = ""
    dumps: tuple = ()  # as FilterContext.dumps
    limits: LimitsHit = field(default_factory=LimitsHit)
    fleet: FleetContext | None = None

    def limit_hit(self, limit: str, value: Any, what: str) -> None:
        """Report a limit this collector hit that may change what it reports (`limits_hit`)."""
        self.limits.hit(limit, value, what, self.rule)


@dataclass
class AccumulatorContext:
    rule: str
    source: str
    node: str | None
    rank: int | None
    line_num: int
    job: JobInfo


class LineNumUnknown(Exception):
    """A line-only accumulator read `ctx.line_num` where it is not known (a scan worker)."""


class _WorkerContext(AccumulatorContext):
    """An `AccumulatorContext` in a chunk-scan worker, which cannot know a line's number in
    its file (only in its chunk): reading `line_num` raises `LineNumUnknown`, and the hit
    goes whole to extraction, which runs the accumulator with the number."""

    def __init__(self, rule: str, source: str, node: str | None, rank: int | None, job: JobInfo):
        self.rule, self.source, self.node, self.rank, self.job = rule, source, node, rank, job

    @property
    def line_num(self) -> int:  # type: ignore[override]
        raise LineNumUnknown(self.rule)


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
    dumps: tuple = ()  # flight-recorder dumps the session ingested
    limits: LimitsHit = field(default_factory=LimitsHit)
    fleet: FleetContext | None = None  # read-only; rules see it as `context.fleet`

    def run_rule(self, name: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except RULE_FAULTS as e:  # a rule's bug, exit or overrun: report it, keep attributing
            self.errors.append(rule_error(name, e, self.engine))
            return None


# what rule code may raise that is its own fault and never stops attribution: an exception,
# sys.exit(), and the time budget's RuleTimeout (rulekit.rules.containment); not KeyboardInterrupt,
# nor a batch executor's own time limit
RULE_FAULTS = (Exception, SystemExit, RuleTimeout)


def rule_error(rule: str, e: BaseException, engine: Any = None) -> dict[str, str]:
    """A rule's exception as a `rule_errors` entry of the result; `where` is the place
    in the rule's own code (the innermost frame of its file, else the innermost)."""
    tb = traceback.extract_tb(e.__traceback__)
    where = f"{tb[-1].filename}:{tb[-1].lineno}" if tb else ""
    r = engine.by_name.get(rule) if engine is not None else None
    span = getattr(r, "span", None)
    if span is not None and tb:
        own = [f for f in tb if f.filename == span.file]
        if own:
            where = f"{own[-1].filename}:{own[-1].lineno}"
    if isinstance(e, SystemExit):
        msg = f"SystemExit: the rule called sys.exit({e.code!r}); a rule must not exit (ignored)"
    elif isinstance(e, RuleTimeout):
        budget = engine.options.rule_timeout if engine is not None else None
        msg = ("RuleTimeout: the rule ran past its time budget" + (f" of {budget:g} s" if budget else "")
               + f" and was stopped ({ENV_RULE_TIMEOUT} sets the budget)")
    else:
        msg = f"{type(e).__name__}: {e}"
    return {"rule": rule, "error": msg, "where": where}


# ---- phase 1: extraction ----------------------------------------------------------------------


MAX_RESOLVED = 200_000  # answers of `resolve` remembered at most (`ExtractionPhase.resolved`; then forgotten at once)
REPEAT_CAP = DEFAULT_REPEAT_CAP  # (EngineOptions.repeat_cap) events kept per (rule, event type, symptom, node, captures); later repeats are aggregated
GROUP_CAP = DEFAULT_GROUP_CAP  # (EngineOptions.group_cap) events kept per (rule, event type, symptom, node) whatever the captures


_UNSET = object()
_NOT_READ = object()  # a line's rank, before anything needed it
_LATER = object()  # a carried timestamp looked up only if it is needed



class _EmitPlan:
    """What every emit of one extractor shares: its event type, catalog lookup, and the
    templates that hold no `{capture}` (rendered, and the symptom made canonical, once)."""

    __slots__ = ("rule", "etype", "lookup", "node_t", "node_const", "symptom", "symptom_const", "fields",
                 "_canonical", "_symptoms")

    def __init__(self, rule: ExtractorRule, canonical: Callable[[str], str]):
        emit = rule.emit
        self.rule = rule
        self.etype = event_type_name(emit.type)
        self.lookup = rule.lookup
        self.node_t = emit.node or None  # an empty template: the line's node, as no template
        self.node_const = self.node_t is not None and "{" not in self.node_t
        self._canonical = canonical
        self._symptoms: dict[str, str] = {}
        self.symptom_const = not emit.symptom or "{" not in emit.symptom
        self.symptom = (canonical(emit.symptom) if emit.symptom else None) if self.symptom_const else None
        self.fields = tuple((k, t, "{" not in t) for k, t in emit.fields)

    def symptom_of(self, values: dict[str, Any]) -> "str | None":
        """The rendered, canonical symptom of a template with captures."""
        rendered = render(self.rule.emit.symptom, values)
        if not rendered:
            return rendered  # "" stays "" (every capture empty), as before
        got = self._symptoms.get(rendered)
        if got is None:
            got = self._symptoms[rendered] = self._canonical(rendered)
        return got


class ExtractionPhase:
    """Runs extractors and accumulators over one observation; returns events added.

    Bounded memory: the same evidence — one extractor, event type, symptom, node
    and captured values (whatever the rank prefix, timestamp or line) — is
    stored as events up to `repeat_cap` times per job, and one extractor's
    events of one type, symptom and node, whatever they captured (pids,
    addresses, sequence numbers never repeat), up to `group_cap` times; beyond
    either cap each observation's repeats are aggregated into one
    `event_repeats` row per group (count, first and last line, last
    timestamp) instead of being held.  An accumulator's events are capped the
    same way (its evidence: the fields it found).  So the events held are bounded
    by the rules, symptoms and nodes of a job, never by the length of its logs."""

    chunk_size = CHUNK_SIZE  # bytes read (and scanned) at a time; each ends at a line end

    def __init__(self, engine: RuleEngine, manager: EventManager, context_id: int, job: JobInfo,
                 repeat_cap: int = REPEAT_CAP, group_cap: int = GROUP_CAP):
        self.engine = engine
        self.manager = manager
        self.context_id = context_id
        self.job = job
        self.year = year_hint(job)  # of year-less stamps (None: attribution finds it, `timeline`)
        self.node_set = set(job.nodes)
        self.added = 0
        self.errors: list[dict[str, str]] = []  # accumulators that raised (reported by every attribute())
        self.repeat_cap = repeat_cap
        self.group_cap = group_cap
        self._kept: dict[tuple, int] = {}  # (rule, type, symptom, node, captures) -> events stored
        self._group_kept: dict[tuple, int] = {}  # (rule, type, symptom, node) -> events stored
        # (oc, group) -> [count, first_line, last_line, last_ts, the line of last_ts (-1: none)] (this observation)
        self._repeats: dict[tuple, list] = {}
        self._plans: dict[str, _EmitPlan] = {}  # rule name -> what its emits share
        self._resolved: dict[tuple, tuple] = {}  # (rule name, captures, rank, host) -> `resolve` (`resolved`)
        self._nodes: dict[str, str | None] = {}  # printed name -> canonical node
        # keys (0, key) and groups (1, group) that reached their cap, in that order: scan workers
        # are told them (`_news_for`) and leave out the hits they would be counted in
        self._capped: list[tuple[int, tuple]] = []
        self._told: dict[int, int] = {}  # worker -> how much of `_capped` it was told
        self._order = StoreOrder(manager.add, manager.next_id)  # ids as one read of the file gives them
        self._roles: dict[int, tuple] = {}  # id(plan rules) -> (rules, `rule_role` of each)
        self._fallback_names = fallback_names(engine)
        # lines whose text rules read cut (`scan.rule_text`): [count, longest, where the first is]
        self.cut_lines: list = [0, 0, ""]
        self._cut_last: tuple = ()

    def _node_of(self, obs: Observation, line: str, rank: int | None, host_name: Any = _NOT_READ) -> str | None:
        """The node a line belongs to: declared, else its printing host (`host_name`:
        the line's, when already read), else its rank's, else the job's only one."""
        if obs.node:
            return obs.node
        if obs.source == "scheduler":
            return None  # the record's own lines: only the node JobInfo names
        if host_name is _NOT_READ:
            host_name = host_of(line)
        if host_name:
            host = self._canonical_node(host_name)
            if host and (not self.node_set or host in self.node_set):
                return host
        if rank is not None:
            node = self.job.rank_to_node(rank)
            if node:
                return node
        if len(self.job.nodes) == 1:
            return self.job.nodes[0]
        return None

    def apply(self, obs: Observation, progress: Callable[[int], None] | None = None, plan: "ScanPlan | None" = None) -> int:
        """Extract one observation; `plan` restricts the rules (inline tests)."""
        plan = plan or self.engine.scan_plan(obs.source, obs.format)
        oc = self.manager.observation_context(self.context_id, obs.source, obs.format, obs.t_start, obs.t_end, obs.name)
        before = self.added
        line_base = obs.first_line
        self._resolved.clear()  # (the node a line gets depends on its observation)
        active: list[_ActiveAccumulator] = []
        carry = TimeCarry(self.year)
        scanned = self._scanned(obs, plan)
        try:
            with fewer_collections():
                self._extract(obs, plan, scanned, oc, line_base, active, carry, progress)
        finally:
            scanned.close()  # worker processes end here, even on an error or a timeout
            self._order.end_of_file()  # nothing held (an accumulator still running stores its events last)
        for acc in active:
            acc.slot = None
            acc.finish(self)
        if self._repeats:
            self.manager.add_repeats([(self.context_id, oc_, rule, etype, sym, node, *agg[:4])
                                      for (oc_, (rule, etype, sym, node)), agg in self._repeats.items()])
            self._repeats.clear()
        self.manager.flush(rows_may_wait=True)
        return self.added - before

    def _extract(self, obs: Observation, plan: ScanPlan, scanned: Iterator[tuple[bytes, list, Any]], oc: int,
                 line_base: int, active: list["_ActiveAccumulator"], carry: TimeCarry,
                 progress: Callable[[int], None] | None) -> None:
        """The per-hit loop of `apply` (accumulators still running stay in `active`).
        A chunk from the workers comes with its hits' facts (`workerhits.WorkerHits`):
        then nothing is read here but the carried timestamp a chunk inherits, and the
        hits the worker knew to be past their cap come as one entry per group, at its
        first such hit, with what they add to its `event_repeats` row."""
        join = CarryJoin(self.year)  # with facts: each rank's carried timestamp where the chunk starts
        roles = self.roles(plan.rules)
        for chunk, hits, got in scanned:
            first = line_base  # the chunk's first line
            if active:
                active[:] = [a for a in active if not a.feed_chunk(chunk, 0, self, first)]
            explained = -1  # where the last line another rule explained starts (a fallback's hit there is dropped)
            if got is not None:  # (the worker counted the lines too; the tail is kept here, below)
                facts, lines, after, newlines, last_ends = got
                carry.new_chunk()
            else:
                facts = lines = None
                newlines = -1
                carry.new_chunk(chunk)
            counted_pos, counted_line = 0, line_base
            line_at, line = -1, ""  # the line decoded last: where it starts, its text
            for k, (start, end, idx, caps) in enumerate(hits):
                if lines is not None:
                    counted_line = first + lines[k]
                else:
                    counted_line += chunk.count(b"\n", counted_pos, start)
                    counted_pos = start
                if idx == LEFT_OUT:  # left out by a worker: past its cap (`caps` is its group, `facts[k]` its repeats)
                    if caps[0] not in self._fallback_names:  # (an extractor's or a line-only accumulator's event)
                        explained = start
                    self._left_out_many(oc, caps, first, *facts[k])  # type: ignore[index]
                    continue
                role = roles[idx]
                if role is ROLE_FALLBACK and explained == start:
                    continue  # the line is explained: the fallback says nothing of it
                rule = plan.rules[idx]
                if start != line_at:  # (the hits of several rules on one line share its text: one decode)
                    line_at, line = start, rule_text(chunk, start, end)
                    if rule_text_cut(start, end):
                        self.cut_line(obs, counted_line, end - start)
                f = None
                if facts is not None:
                    f = facts[k]
                    if f[3] is INHERIT or type(f[3]) is Tail:
                        f = (f[0], f[1], f[2], join.resolve(f[3], f[2]), f[4])
                    rank = f[2]
                else:
                    rank = rank_of(line)  # (the carry is per rank)
                if isinstance(rule, AccumulatorRule):
                    # the carried timestamp is looked up only for a line without its own
                    ts, made = self._start_accumulator(rule, obs, line, caps, counted_line, oc, active, chunk, end,
                                                       f, carry, start)
                    if made and role is ROLE_LINE_ONLY:
                        explained = start
                else:
                    ts = self._emit(rule, obs, line, caps, counted_line, oc, carry, chunk, start, f, rank)
                    if role is ROLE_EXPLAINS:
                        explained = start
                if f is None:
                    carry.saw(ts, end, rank)
            if facts is not None:
                join.end_chunk(chunk, after, last_ends)
            line_base = first + newlines if lines is not None else counted_line + chunk.count(b"\n", counted_pos)
            if progress:
                progress(len(chunk))

    def _scanned(self, obs: Observation, plan: ScanPlan) -> Iterator[tuple[bytes, list, Any]]:
        """(chunk, hits, facts) in file order: a large log file is scanned by worker
        processes (`rulekit.extract.parallel`), which also read each hit's facts and
        leave out the hits already past their cap (`workerhits.WorkerHits`), anything
        else here (facts None: read lazily, per hit); the same events either way."""
        size = self.chunk_size
        if not plan.rules:
            return ((chunk, [], None) for chunk in obs.chunks(size))
        opts = self.engine.options
        workers = scan_workers(obs.size(), opts.scan_workers, opts.max_scan_workers) if obs.path is not None else 0
        if workers:
            # the printing host is read only where `_node_of` would look at it
            hosts = not obs.node and obs.source != "scheduler"
            self._told = {}  # new workers: each is told every cap reached so far with its first chunk
            return parallel_scan(obs.path, plan.scanner, workers, size,
                                 WorkerHits(self, obs, plan.rules, self.year, hosts), self._news_for)
        scan = plan.scanner.scan
        return ((chunk, scan(chunk), None) for chunk in obs.chunks(size))

    def roles(self, rules: "tuple[ExtractorRule | AccumulatorRule, ...]") -> tuple[str | None, ...]:
        """Per rule index of a plan's rules, what its hit says of its line (`rule_role`),
        worked out once per corpus (the plans' rule tuples live as long as the engine)."""
        got = self.engine.derived(("roles", id(rules)), lambda: (rules, tuple(rule_role(r) for r in rules)))
        if got[0] is not rules:  # (an id reused by another tuple: not the engine's own)
            return tuple(rule_role(r) for r in rules)
        return got[1]

    def _news_for(self, worker: int) -> list[tuple[int, tuple]] | None:
        """The caps reached since `worker` (-1: this process) was last told (None: none)."""
        told = self._told.get(worker, 0)
        if told == len(self._capped):
            return None
        self._told[worker] = len(self._capped)
        return self._capped[told:]

    def cut_line(self, obs: Observation, line_num: int, size: int) -> None:
        """Note a line whose text rules read was cut to `RULE_TEXT_BYTES` (the result's
        `limits_hit`)."""
        cut = self.cut_lines
        if self._cut_last == (obs.name, line_num):
            return  # (a line both hit and fed to an accumulator)
        self._cut_last = (obs.name, line_num)
        if not cut[0]:
            cut[2] = f"{obs.name}:{line_num}"
        cut[0] += 1
        cut[1] = max(cut[1], size)

    def capped_groups(self) -> list[tuple]:
        """The (rule, event type, symptom, node) groups that reached `group_cap`."""
        return [g for g, n in self._group_kept.items() if n >= self.group_cap]

    def _left_out(self, oc: int, group: tuple, line_num: int, ts: str | None) -> None:
        """Count one hit past its cap into its group's `event_repeats` row."""
        self._left_out_many(oc, group, 0, 1, line_num, line_num, ts, line_num)

    def _left_out_many(self, oc: int, group: tuple, base: int, count: int, first: int, last: int,
                       ts: str | None, ts_at: int) -> None:
        """Count hits of one group past their cap into its `event_repeats` row (one row
        per group: bounded, whatever was captured): one hit, or a worker's of one chunk
        (`workerhits.GroupCounts`: lines from `base`, the chunk's first) at the first of
        them, what counting each in line order would make of it.  A worker's entry may
        already hold later lines than a hit counted after it here (one it sent whole)."""
        agg = self._repeats.get((oc, group))
        if agg is None:
            self._repeats[(oc, group)] = [count, base + first, base + last, ts, base + ts_at if ts else -1]
        else:
            agg[0] += count
            if base + last > agg[2]:
                agg[2] = base + last
            if ts and base + ts_at > agg[4]:
                agg[3], agg[4] = ts, base + ts_at

    def resolve(self, plan: "_EmitPlan", obs: Observation, line: str, caps: dict, rank: Any,
                host: Any) -> tuple[dict, str | None, str | None, tuple, tuple, Any]:
        """(values, symptom, node, group, key, rank) of one extractor hit: what its event
        would say and the cap keys it counts in.  `rank` / `host`: the line's, or
        `_NOT_READ` (read here only if the node needs it; the rank read is returned)."""
        if plan.lookup or None in caps.values():
            values: dict[str, Any] = dict(plan.lookup)
            for k, v in caps.items():
                if v is not None:
                    values[k] = v
        else:
            values = caps  # read only
        node = rendered = None
        if plan.node_t is not None:
            rendered = plan.node_t if plan.node_const else render(plan.node_t, values)
            if rendered:
                node = self._canonical_node(rendered)
        if node is None and not rendered:
            if rank is _NOT_READ:
                rank = rank_of(line)
            node = self._node_of(obs, line, rank, host)
        symptom = plan.symptom if plan.symptom_const else plan.symptom_of(values)
        group = (plan.rule.name, plan.etype, symptom, node)
        return values, symptom, node, group, (*group, tuple(caps.values())), rank  # key: the same evidence again (any rank)

    def resolved(self, plan: "_EmitPlan", obs: Observation, line: str, caps: dict, rank: Any,
                 host: Any) -> tuple[dict, str | None, str | None, tuple, tuple, Any]:
        """`resolve` of a hit whose rank and host were read (by a worker), remembered: a
        pure function of (rule, captures, rank, host) for one observation, and a hit
        past its cap is the same evidence again, so it is asked often (the answer's
        `values` is read only)."""
        memo = (plan.rule.name, tuple(caps.values()), rank, host)
        got = self._resolved.get(memo)
        if got is None:
            if len(self._resolved) > MAX_RESOLVED:
                self._resolved.clear()
            got = self._resolved[memo] = self.resolve(plan, obs, line, caps, rank, host)
        return got

    def emit_plan(self, rule: ExtractorRule) -> "_EmitPlan":
        plan = self._plans.get(rule.name)
        if plan is None or plan.rule is not rule:
            plan = self._plans[rule.name] = _EmitPlan(rule, self.engine.registry.canonical)
        return plan

    def _canonical_node(self, name: str) -> str | None:
        """`config.canonical_node`, remembered per printed name (the config is fixed for a phase)."""
        got = self._nodes.get(name, _UNSET)
        if got is _UNSET:
            got = self._nodes[name] = self.engine.config.canonical_node(name)
        return got  # type: ignore[return-value]

    def _admit(self, group: tuple, key: tuple, tell: bool) -> bool:
        """Whether one more event of `key` (in `group`) is stored, counted in if so (False:
        past a cap, only counted in its group's repeats).  `tell`: the keys and groups
        reaching their cap now are news for scan workers (extractor hits and line-only
        accumulators' events, which they leave out; the events of an accumulator that
        reads following lines they never see)."""
        kept = self._kept.get(key, 0)
        in_group = self._group_kept.get(group, 0)
        if kept >= self.repeat_cap or in_group >= self.group_cap:
            return False
        self._kept[key] = kept + 1
        self._group_kept[group] = in_group + 1
        if tell:
            if kept + 1 >= self.repeat_cap:  # from now on every hit of this key is left out
                self._capped.append((0, key))
            if in_group + 1 >= self.group_cap:
                self._capped.append((1, group))
        return True

    def _emit(self, rule: ExtractorRule, obs: Observation, line: str, caps: dict, line_num: int, oc: int,
              carry: TimeCarry | None = None, chunk: bytes = b"", start: int = 0,
              facts: tuple | None = None, rank_read: Any = _NOT_READ) -> str | None:
        """Add the rule's event for one line (or count it, beyond the caps); returns the
        line's own timestamp.  What only a stored event shows (uptime, the
        rendered fields, the carried timestamp) is computed only for one that is stored;
        what is the same for every line of a rule (event type, constant templates and
        their canonical names) is computed once (`_EmitPlan`)."""
        plan = self.emit_plan(rule)
        if facts is None:
            ts, uptime = timestamp_of(line, self.year)
            rank, carried, host = rank_read, _NOT_READ, _NOT_READ
            values, symptom, node, group, key, rank = self.resolve(plan, obs, line, caps, rank, host)
        else:  # a worker read the rank and host
            ts, uptime, rank, carried, host = facts
            values, symptom, node, group, key, rank = self.resolved(plan, obs, line, caps, rank, host)
        etype = plan.etype
        if not self._admit(group, key, True):
            if ts is None and carry is not None and facts is None:
                carry.advance(chunk, start, rank if rank is not _NOT_READ else rank_of(line))  # what a lookback here would have remembered
            self._left_out(oc, group, line_num, ts)
            return ts  # a stamped line is the nearest earlier stamped line for what follows, stored or not
        fields = dict(values)
        for k, t, const in plan.fields:
            fields[k] = t if const else render(t, values)
        if rank is _NOT_READ:
            rank = rank_of(line)
        _line_facts(fields, rank, uptime, obs)  # type: ignore[arg-type]
        if ts is None:
            c = carried if carried is not _NOT_READ else carry.before(chunk, start, rank) if carry is not None else None
            if c:
                fields["carried_ts"] = c
        m = self.manager
        self._order.store(m.row(self.context_id, etype, rule.name, oc, ts, line_num, line, node, symptom, fields))
        self.added += 1
        return ts

    def _start_accumulator(self, rule: AccumulatorRule, obs: Observation, line: str, caps: dict, line_num: int,
                           oc: int, active: list["_ActiveAccumulator"], chunk: bytes, end: int,
                           facts: tuple | None, carry: TimeCarry | None = None,
                           start: int = 0) -> tuple[str | None, int]:
        """Start an accumulator on its trigger line and feed it the rest of the chunk
        (still running: appended to `active`); returns the line's own timestamp and, for
        one that reads its trigger line alone, how many events it made (else 0).
        `facts`: the line's (timestamp, uptime, rank, carried, host) a worker read, or
        None: then they are read here, the carried timestamp (from `carry`, for the hit at
        `start` of `chunk`, per rank) only for a line without its own, and, for an
        accumulator that reads its trigger line alone, only when it makes an event."""
        if facts is None:
            ts, _uptime = timestamp_of(line, self.year)
            rank, host = rank_of(line), _NOT_READ
            carried: Any = _LATER if ts is None and carry is not None else None
        else:
            ts, _uptime, rank, carried, host = facts
        node = self._node_of(obs, line, rank, host)
        ctx = AccumulatorContext(rule.name, obs.source, node, rank, line_num, self.job)
        try:
            instance = rule.factory(ctx, line, caps)
        except RULE_FAULTS as e:  # the rule's bug: reported, the line is skipped
            self.errors.append(rule_error(rule.name, e, self.engine))
            return ts, 0
        if rule.max_lines < 1:  # it reads its trigger line alone: finalized at once, fed nothing
            # (without an `_ActiveAccumulator`: thousands of such triggers in a long log)
            specs = self.specs_of(rule.name, instance)
            if carried is _LATER:
                if specs:
                    carried = carry.before(chunk, start, rank)  # type: ignore[union-attr]
                else:  # (what a lookback here would have remembered, without the search)
                    carry.advance(chunk, start, rank)  # type: ignore[union-attr]
                    carried = None
            for spec in specs:
                self.add_spec(spec, rule.name, oc, node, line_num, ts, line, rank, carried, True)
            return ts, len(specs)
        if carried is _LATER:
            carried = carry.before(chunk, start, rank)  # type: ignore[union-attr]
        acc = _ActiveAccumulator(rule, obs, ctx, oc, rank, line_num, ts, line)
        acc.carried = carried
        acc.instance = instance
        if not acc.feed_chunk(chunk, end + 1, self, line_num + 1):  # it goes on in the next chunk: its events keep their place
            acc.slot = self._order.open_slot()
            active.append(acc)
        return ts, 0

    def finalize(self, rule: str, instance: Any, oc: int, node: str | None, line_num: int, ts: str | None,
                 datum: str, rank: int | None, carried: str | None, tell: bool = False,
                 span_end: int | None = None) -> int:
        """Add the events of an accumulator's `finalize()` (`add_spec`); one that raises is
        the rule's error, and none of its events is added.  `tell`: a line-only
        accumulator's, whose capped evidence scan workers leave out (`line_only_groups`).
        `span_end`: the last line an accumulator that read following lines took in (its
        events carry it: the lines from the trigger to there are its reading).  Returns
        how many events it made (stored or past their cap)."""
        specs = self.specs_of(rule, instance)
        for spec in specs:
            self.add_spec(spec, rule, oc, node, line_num, ts, datum, rank, carried, tell, span_end)
        return len(specs)

    def specs_of(self, rule: str, instance: Any) -> list[EventSpec]:
        """An accumulator's `finalize()`; one that raises is the rule's error, and makes
        no event."""
        try:
            return list(instance.finalize() or ())
        except RULE_FAULTS as e:  # reported; the accumulator emits nothing
            self.errors.append(rule_error(rule, e, self.engine))
            return []

    def spec_group(self, spec: EventSpec, rule: str, default_node: str | None) -> tuple[str | None, str | None, tuple, tuple]:
        """(node, symptom, group, key) of an accumulator's event: what it says and the cap
        keys it counts in (its evidence: the fields it found)."""
        node = spec.node if spec.node is not None else default_node
        if spec.node is not None:
            node = self.engine.config.canonical_node(spec.node)
        symptom = self.engine.registry.canonical(spec.symptom) if spec.symptom else None
        group = (rule, event_type_name(spec.type), symptom, node)
        return node, symptom, group, (*group, _evidence_key(spec.fields))

    def line_only_groups(self, rule: AccumulatorRule, obs: Observation, line: str, caps: dict, rank: Any,
                         host: Any, ts: str | None) -> list[tuple[tuple, tuple, str | None]] | None:
        """For a scan worker: the (group, key, timestamp) of each event a line-only accumulator
        (`max_lines < 1`) makes of its trigger line, as `_start_accumulator` and `add_spec`
        would make them ([]: none), or None when a worker cannot tell (the rule raised or
        read the line's number, or an event names its own line): then extraction runs it."""
        node = self._node_of(obs, line, rank, host)
        try:
            instance = rule.factory(_WorkerContext(rule.name, obs.source, node, rank, self.job), line, caps)
            specs = list(instance.finalize() or ())
            out = []
            for spec in specs:
                if spec.line_num is not None:
                    return None
                out.append((*self.spec_group(spec, rule.name, node)[2:], spec.timestamp or ts))
            return out
        except RULE_FAULTS:  # LineNumUnknown, or the rule's error: reported by extraction
            return None

    def add_spec(self, spec: EventSpec, rule: str, oc: int, default_node: str | None, line_num: int,
                 ts: str | None, datum: str, rank: int | None = None, carried: str | None = None,
                 tell: bool = False, span_end: int | None = None) -> None:
        """Add an accumulator's event: its fields, with the trigger line's `rank` (unless
        it set one) and, when neither it nor the line has a timestamp, the `carried` one.
        The same evidence again (rule, event type, symptom, node, the fields it found,
        whatever the rank or carried timestamp) is capped as an extractor's is."""
        node, symptom, group, key = self.spec_group(spec, rule, default_node)
        etype = group[1]
        ts = spec.timestamp or ts
        line_num = spec.line_num if spec.line_num is not None else line_num
        if not self._admit(group, key, tell and _plain_key(key)):
            self._left_out(oc, group, line_num, ts)
            return
        fields = dict(spec.fields)
        if rank is not None:
            fields.setdefault("rank", rank)
        if not ts and carried:
            fields.setdefault("carried_ts", carried)
        if span_end is not None and span_end > line_num and spec.line_num is None:
            fields.setdefault("span_end", span_end)
        m = self.manager
        self._order.store(m.row(self.context_id, etype, rule, oc, ts, line_num,
                    spec.datum if spec.datum is not None else datum, node, symptom, fields))
        self.added += 1


_PLAIN = (str, int, float, bool, type(None))


def _plain_key(key: tuple) -> bool:
    """Whether an accumulator's cap key can travel to a scan worker as news: its evidence
    is text, or values of plain types (a rule may put anything in its fields; a value
    that cannot be pickled would stop the scan)."""
    evidence = key[-1]
    return isinstance(evidence, str) or all(isinstance(v, _PLAIN) for _k, v in evidence)


def _evidence_key(fields: Mapping[str, Any]) -> Any:
    """What tells an accumulator's evidence from other evidence of its group: its fields
    (as text when a value cannot be hashed)."""
    key = tuple(fields.items())
    try:
        hash(key)
    except TypeError:
        return json.dumps(fields, sort_keys=True, default=str)
    return key


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
        self.slot: Slot | None = None  # its place in the store order, once it runs past its trigger's chunk
        self.span_end = line_num  # the last line it took in (fed, and kept reading after)

    def feed_chunk(self, chunk: bytes, pos: int, phase: ExtractionPhase, line_at: int) -> bool:
        """Feed lines from `pos` (line number `line_at`); True when finished (opted out or
        max_lines).  With a rank, only lines of that rank or of none are fed: one regex
        search finds the next such line (`rank_line_finder`), so another rank's lines
        cost nothing here.  `span_end` follows the last line it kept reading after."""
        n = len(chunk)
        find = rank_line_finder(self.rank) if self.rank is not None else None
        base, took = pos, -1  # where `line_at` is; the start of the last line it took in, in this chunk
        while pos < n and not self.done:
            if find is not None:
                pos = find(chunk, pos)
                if pos < 0 or pos >= n:  # (the empty "line" after a last newline is none)
                    break
            nl = chunk.find(b"\n", pos)
            end = n if nl < 0 else nl
            start = pos
            pos = end + 1
            line = rule_text(chunk, start, end)
            if rule_text_cut(start, end):
                phase.cut_line(self.obs, line_at + chunk.count(b"\n", base, start), end - start)
            if find is not None and not line.isascii():
                r = rank_of(line)  # a non-ASCII prefix: the str pattern decides (`rank_of_raw`)
                if r is not None and r != self.rank:
                    continue
            self.fed += 1
            keep = False
            try:
                keep = bool(self.instance.feed(line))
            except RULE_FAULTS as e:  # reported; the accumulator stops and is finalized
                phase.errors.append(rule_error(self.rule.name, e, phase.engine))
                keep = False
            if keep:
                took = start
            if not keep or self.fed >= self.rule.max_lines:
                if took >= 0:  # (its events carry the span: known before they are made)
                    self.span_end = line_at + chunk.count(b"\n", base, took)
                    took = -1
                self.finish(phase)
        if took >= 0:
            self.span_end = line_at + chunk.count(b"\n", base, took)
        return self.done

    def finish(self, phase: ExtractionPhase) -> None:
        if self.done:
            return
        self.done = True
        done = partial(phase.finalize, self.rule.name, self.instance, self.oc, self.ctx.node, self.line_num, self.ts,
                       self.datum, self.rank, self.carried, span_end=self.span_end)
        if self.slot is not None:
            phase._order.fill(self.slot, done)
        else:
            done()


# ---- phase 2: filtering ----------------------------------------------------------------------------


def fallback_names(engine: RuleEngine) -> frozenset[str]:
    """The fallback accumulators' names (`AccumulatorRule.fallback`), once per corpus."""
    return engine.derived("fallback names", lambda: frozenset(a.name for a in engine.accumulators if a.fallback))


def _filter_phases(engine: RuleEngine) -> tuple[tuple[Any, str], ...]:
    """(filter, the trace's phase name: its stratum) in corpus order, once per corpus."""
    def build() -> tuple[tuple[Any, str], ...]:
        out = []
        for rule in engine.filters:
            stratum = stratum_of(rule.priority, FilterPriority)
            out.append((rule, f"filter:{stratum.name if stratum else rule.priority}"))
        return tuple(out)
    return engine.derived("filter phases", build)


class FilterPhase:
    """Every filter in corpus order (stratum, then priority); each runs as the
    stream's current rule, so its changes need not name it."""

    def apply(self, state: AttributionState) -> None:
        # fallback events on lines other events explain go first (rulekit.engine.explained)
        fallbacks = fallback_names(state.engine)
        if fallbacks:
            with state.stream.running(None, "filter:EXPLAINED"):
                drop_explained(state.stream, fallbacks)
        stream, job, registry, dumps, limits, fleet = (state.stream, state.job, state.engine.registry, state.dumps,
                                                       state.limits, state.fleet)
        skew = state.engine.config.clock_skew_seconds
        for rule, phase in _filter_phases(state.engine):
            name = rule.name
            ctx = FilterContext(stream, job, registry, name, rule.selects, dumps, limits, skew, fleet=fleet)
            # as `with stream.running(name, phase)`, without a generator-based context manager per
            # filter (a small job runs every filter of the corpus: ~4 µs each)
            before = stream.rule, stream.phase
            stream.rule, stream.phase = name, phase
            try:
                state.run_rule(name, partial(rule.func, ctx))
            finally:
                stream.rule, stream.phase = before


# ---- phase 3: refinement -----------------------------------------------------------------------------


_sort_key = event_order_key  # one explicit order everywhere (rulekit/engine/ordering.py)


def _refiners(engine: RuleEngine, step: str) -> tuple:
    """The refiners of one step (their stratum: SCRUB, FINAL, POST_OUTCOME), in order, once per corpus."""
    def build() -> dict[str, tuple]:
        rs = engine.refiners
        return {"scrub": tuple(r for r in rs if r.priority < RefinerPriority.FINAL),
                "final": tuple(r for r in rs if RefinerPriority.FINAL <= r.priority < RefinerPriority.POST_OUTCOME),
                "post_outcome": tuple(r for r in rs if r.priority >= RefinerPriority.POST_OUTCOME)}
    return engine.derived("refiners by step", build)[step]


class RefinementPhase:
    """The spec's refinement as named steps, run in `STEPS` order:

    - scrub: one SymptomSet per node from its bad-node events; SCRUB refiners per node;
    - final: the job-wide set (aggregated); FINAL refiners; removals back-propagated;
    - outcome: the job-wide set again; the outcome mapping (`decide_outcome`);
    - post_outcome: POST_OUTCOME refiners (may change the decision); removals back-propagated.

    Refiners see the stream frozen: they change symptom sets, and the phase turns
    those changes into event changes at back-propagation."""

    STEPS = ("scrub", "final", "outcome", "post_outcome")

    def __init__(self) -> None:
        self._propagated: set[tuple[str | None, str]] = set()  # (node, symptom) removals applied

    def apply(self, state: AttributionState) -> None:
        state.stream.phase = "refine"
        for step in self.STEPS:
            getattr(self, step)(state)

    def _run(self, state: AttributionState, rules: tuple, make_ctx: Callable[[Any], RefinerContext]) -> None:
        with state.stream.frozen():
            for rule in rules:
                ctx = make_ctx(rule)
                state.run_rule(rule.name, lambda: rule.func(ctx))

    def scrub(self, state: AttributionState) -> None:
        reg = state.engine.registry
        node_sets: dict[str | None, SymptomSet] = {}
        carried: dict[tuple[str | None, str], list[int]] = {}  # (node, symptom) -> event ids, first seen first
        for e in state.stream.bad_events():
            if e.symptom:
                ids = carried.get((e.node, e.symptom))
                if ids is None:
                    carried[(e.node, e.symptom)] = [e.id]
                else:
                    ids.append(e.id)
        for (node, symptom), ids in carried.items():
            node_set = node_sets.get(node)
            if node_set is None:
                node_set = node_sets[node] = SymptomSet(reg, node, state.trace, "refine:SCRUB")
            node_set.put_many(symptom, node, ids)
        state.node_sets = node_sets
        scrub = _refiners(state.engine, "scrub")
        skew = state.engine.config.clock_skew_seconds
        for node in sorted(node_sets, key=lambda n: (n is None, n or "")):
            self._run(state, scrub, lambda rule: RefinerContext(node_sets[node], node_sets, state.stream, state.job,
                                                                reg, node=node, rule=rule.name, clock_skew=skew,
                                                                fleet=state.fleet))

    def final(self, state: AttributionState) -> None:
        state.job_set = job_set = self._aggregate(state, "refine:FINAL")
        final = _refiners(state.engine, "final")
        self._run(state, final, lambda rule: RefinerContext(job_set, state.node_sets, state.stream, state.job,
                                                            state.engine.registry, rule=rule.name,
                                                            clock_skew=state.engine.config.clock_skew_seconds,
                                                            fleet=state.fleet))
        self._back_propagate(state, job_set)

    def outcome(self, state: AttributionState) -> None:
        """The outcome mapping on what remains."""
        state.job_set = job_set = self._aggregate(state, "refine:POST_OUTCOME")
        state.decision = decide_outcome(job_set, self._first_events(state))

    def post_outcome(self, state: AttributionState) -> None:
        post = _refiners(state.engine, "post_outcome")
        job_set = state.job_set
        assert job_set is not None  # set by the outcome step
        self._run(state, post, lambda rule: RefinerContext(job_set, state.node_sets, state.stream, state.job,
                                                           state.engine.registry, outcome=state.decision,
                                                           rule=rule.name,
                                                           clock_skew=state.engine.config.clock_skew_seconds,
                                                           fleet=state.fleet))
        self._back_propagate(state, job_set)

    def _aggregate(self, state: AttributionState, phase: str) -> SymptomSet:
        job_set = SymptomSet(state.engine.registry, None, state.trace, phase)
        for node, s in state.node_sets.items():
            s.phase = phase
            job_set.merge(s, node)
        return job_set

    def _back_propagate(self, state: AttributionState, job_set: SymptomSet) -> None:
        """Apply symptom removals (job-wide and per node) to the bad-node events.

        A (node, symptom) once applied is not looked at again (after FINAL, again
        after POST_OUTCOME): its bad events are gone or demoted, and refiners (the
        stream frozen) cannot make more."""
        stream = state.stream
        prev = stream.phase
        done = self._propagated
        for node, s in state.node_sets.items():
            for sym in s.recorded():
                if (node, sym) in done:
                    continue
                job_wide = job_set.removal(sym)
                removal = job_wide or s.removal(sym)
                if removal is None:
                    continue
                done.add((node, sym))
                events = [e for e in stream.events(s.event_ids(sym)) if e.is_bad]
                stream.phase = job_set.phase if job_wide is not None else s.phase
                if removal.action == "discard":
                    stream.discard(events, removal.rule, removal.reason)
                else:
                    stream.demote(events, removal.rule, removal.reason)
                s.record_removal(sym, removal)
        stream.phase = prev

    def _first_events(self, state: AttributionState) -> dict[str, tuple[Any, int, str | None]]:
        """symptom -> (order key without the event id, event id, node) of its earliest
        bad event, in that order (one pass: a minimum per symptom, not a sort of all)."""
        first: dict[str, tuple[tuple, Event]] = {}
        for e in state.stream.bad_events():
            if e.symptom:
                k = _sort_key(e)
                got = first.get(e.symptom)
                if got is None or k < got[0]:
                    first[e.symptom] = (k, e)
        return {sym: (k[:-1], e.id, e.node) for sym, (k, e) in sorted(first.items(), key=lambda kv: kv[1][0])}


# ---- phase 4: collection ---------------------------------------------------------------------------------


class CollectionPhase:
    def apply(self, state: AttributionState, partial: dict[str, Any]) -> None:
        state.stream.phase = "collect"
        with state.stream.frozen():
            for rule in state.engine.collectors:
                ctx = CollectorContext(state.stream, state.job, state.engine.registry, partial, rule.name, state.dumps,
                                       state.limits, fleet=state.fleet)
                value = state.run_rule(rule.name, lambda: rule.func(ctx))
                if value is not None:
                    state.collectors[rule.name] = value


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
        resolved = resource_blames(events, reg, len(state.job.nodes))
        bad_nodes, affected_nodes, outranked = blame_nodes(events, reg, d, _sort_key,
                                                           state.engine.config.node_domain, resolved=resolved)
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
            first = next((e for e in root_events if e.id == d.root_event_id), None)
            per_key = state.engine.options.evidence_per_key
            root_events = first_repeats(root_events, per_key)  # (what a capped store holds of them too)
            root_events.sort(key=lambda e: (e.node != d.root_node, _sort_key(e)))
            first = first or (root_events[0] if root_events else None)
            info = reg.info(d.root_symptom)
            root_blame = blame_of(first, reg, resolved) if first else info.blame
            root = {"symptom": d.root_symptom, "node": d.root_node, "rule": first.rule if first else None,
                    "blame": root_blame,
                    "action": "none" if root_blame == "environment" and info.blame != "environment" else info.action,
                    "evidence": [e.to_evidence() for e in root_events[:per_key]]}
            root.update(root_action(root, bad_nodes))
        root_suspected = bool(root) and reg.info(d.root_symptom).blame in CERTAIN_BLAMES and bool(root_events) \
            and all(e.fields.get("certain") is False for e in root_events)
        confidence, alternatives = assess(d, remaining, reg, root_suspected)
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


# fields a line adds to its event's evidence (`_line_facts`, the carried stamp, an accumulator's span): not
# part of what makes two events the same evidence (ExtractionPhase's repeat key)
_LINE_FIELDS = frozenset(("rank", "uptime", "declared_node", "carried_ts", "span_end"))


def first_repeats(events: list[Event], k: int) -> list[Event]:
    """The events a result may list: of the repeats of one evidence (the same rule,
    event type, symptom, node and fields, whatever the rank, line and stamps), the first
    `k` in the order they were read (event id).  The extraction phase holds the first
    `repeat_cap` of each such evidence and counts the rest, so with `k <= repeat_cap`
    a capped store and an uncapped one list the same items (a store counts by the
    captured values; what a line adds is left out here, so evidence counted apart
    there may share a count here: never the other way round), in id order."""
    seen: dict[Any, int] = {}
    out: list[Event] = []
    for e in sorted(events, key=_event_id):
        f = e.fields
        rest = tuple(sorted((n, v) for n, v in f.items() if n not in _LINE_FIELDS)) if f else ()
        key: Any = (e.rule, e.event_type, e.symptom, e.node, rest)
        try:
            n = seen.get(key, 0)
        except TypeError:  # a value that cannot be hashed: its text
            key = (e.rule, e.event_type, e.symptom, e.node, json.dumps(dict(rest), sort_keys=True, default=str))
            n = seen.get(key, 0)
        if n < k:
            seen[key] = n + 1
            out.append(e)
    return out


def _event_id(e: Event) -> int:
    return e.id


def _evidence(events: list[Event], reg: SymptomRegistry, per_key: int = EVIDENCE_PER_KEY,
              most: int = EVIDENCE_MAX) -> tuple[list[dict[str, Any]], int]:
    """The first `per_key` events per (type, symptom, node) and `most` in all
    (EngineOptions.evidence_per_key / evidence_max; the bad ones kept first, by rank),
    listed in time order (`ordering.event_order_key`); returns them and how many were
    left out.

    Within one key the type and rank are the same, so its first few in the report's
    order are its first few by event order: those are picked per key (no sort of
    every event), then only they are sorted.  Repeats of one evidence take part by
    their first `per_key` in the order they were read (`first_repeats`)."""
    groups: dict[tuple, list[Event]] = {}
    for e in first_repeats(events, per_key):
        groups.setdefault((e.event_type, e.symptom, e.node), []).append(e)
    picked: list[Event] = []
    for group in groups.values():
        picked.extend(group if len(group) <= per_key else first_in_order(group, per_key))
    picked.sort(key=lambda e: (not e.is_bad, -reg.rank(e.symptom or ""), _sort_key(e)))
    picked = picked[:most]  # the ones kept: bad first, by rank; then listed in time order
    picked.sort(key=_sort_key)
    out = [e.to_evidence() for e in picked]
    return out, len(events) - len(out)

