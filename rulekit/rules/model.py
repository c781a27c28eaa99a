"""The rule model: the typed IR that every front-end (TOML, DSL, Python plugin)
produces and the loader validates and freezes into a RuleEngine.

Plain frozen dataclasses with a source span on everything.  No parsing, no I/O,
no knowledge of which file format a rule came from (beyond `span.file`).
"""
from __future__ import annotations

from dataclasses import field
from enum import Enum, IntEnum
from typing import Any, Callable, Mapping

from rulekit.rules.records import dataclass
from rulekit.diagnostics import Span

OUTCOMES = ("hardware", "network", "application", "infrastructure", "cancelled", "timeout", "success", "unknown")
# Whom a symptom implicates (docs/blame.md): only `node`, `link` and `peer` put a node in `bad_nodes`.
# `storage` (a filesystem or disk) and `service` (prolog, container hook, driver, fabric manager):
# `node` when the evidence shows the resource is the node's own, `environment` otherwise
# (rulekit/engine/locality.py)
BLAMES = ("node", "link", "peer", "storage", "service", "workload", "environment", "scheduler", "none")
NODE_BLAMES = ("node", "link", "peer")
# What to do about a blamed node (Xid 154's recovery action takes precedence when printed).
ACTIONS = ("reset_gpu", "reboot", "drain_p2p", "drain_and_reset", "drain_and_rma", "check_link", "inspect", "none")


class EventType(str, Enum):
    BAD_NODE = "Attribution.node.bad"
    INTERESTING_NODE = "Attribution.node.interesting"
    BAD_PEERS = "Attribution.node.bad_peers"
    DATA = "Attribution.data"


# short names used in rule files -> well-known event type names
EMIT_TYPES: dict[str, EventType] = {
    "bad_node": EventType.BAD_NODE,
    "interesting_node": EventType.INTERESTING_NODE,
    "bad_peers": EventType.BAD_PEERS,
    "data": EventType.DATA,
}
SHORT_EMIT = {v.value: k for k, v in EMIT_TYPES.items()}


def event_type_name(t: "str | EventType") -> str:
    """The stored name of an event type given as a rule-file short name (`bad_node`),
    an `EventType`, or already the stored name (returned as it is).  The one mapping
    from what rules write to what the store holds."""
    if isinstance(t, EventType):
        return t.value
    got = EMIT_TYPES.get(t)
    return got.value if got is not None else t


def short_type(name: str) -> str:
    """The rule-file short name of a stored event type (unknown names unchanged)."""
    return SHORT_EMIT.get(name, name)


class RuleKind(str, Enum):
    EXTRACTOR = "extractor"
    ACCUMULATOR = "accumulator"
    FILTER = "filter"
    REFINER = "refiner"
    COLLECTOR = "collector"
    METRIC = "metric"


class FilterPriority(IntEnum):
    """Filter strata.  A priority is a stratum plus an offset 0..999; lower runs first."""

    EARLY = 1000
    MID = 2000
    STANDARD = 3000
    LATE = 4000


class RefinerPriority(IntEnum):
    """Refiner strata: SCRUB sees one node's symptoms, FINAL the job-wide set,
    POST_OUTCOME the job-wide set plus the chosen outcome."""

    SCRUB = 1000
    FINAL = 2000
    POST_OUTCOME = 3000


STRATUM_WIDTH = 1000


def stratum_of(priority: int, strata: type[IntEnum]) -> IntEnum | None:
    """The stratum a numeric priority falls in, or None if it is out of range."""
    for s in sorted(strata, reverse=True):
        if s <= priority < s + STRATUM_WIDTH:
            return s
    return None


@dataclass(frozen=True)
class Symptom:
    name: str
    outcome: str
    sub_domain: str
    rank: int
    docs: str = ""
    aliases: tuple[str, ...] = ()
    span: Span | None = None
    blame: str | None = None  # one of BLAMES; None: taken from the longest matching outcome rule
    action: str | None = None  # one of ACTIONS; None: taken from the outcome rule, else per blame


@dataclass(frozen=True)
class OutcomeRule:
    """Outcome mapping rule: symptoms with this prefix that did not set an outcome /
    sub_domain / rank themselves take these.  Longest prefix wins."""

    prefix: str
    outcome: str | None = None
    sub_domain: str | None = None
    rank: int | None = None
    span: Span | None = None
    blame: str | None = None
    action: str | None = None


@dataclass(frozen=True)
class Emit:
    """What an extractor produces on a match.  `symptom`, `node` and field values are
    templates: `{capture}` is replaced by the named group's text."""

    type: str = "bad_node"  # key of EMIT_TYPES
    symptom: str | None = None
    node: str | None = None
    fields: tuple[tuple[str, str], ...] = ()
    span: Span | None = None


@dataclass(frozen=True)
class LineTest:
    """An inline test case: `line` run through the rule alone.

    expect: an emit type ("bad_node", ...) or "nothing".  symptom / node / captures
    (subset) are checked when given."""

    line: str
    expect: str
    symptom: str | None = None
    node: str | None = None
    captures: tuple[tuple[str, str], ...] = ()
    source: str | None = None
    format: str | None = None
    span: Span | None = None


@dataclass(frozen=True)
class ExtractorRule:
    name: str
    author: str
    span: Span
    match_re: str
    emit: Emit
    match_span: Span | None = None  # span of the pattern text itself (for regex diagnostics)
    sources: tuple[str, ...] = ()  # empty: every source
    formats: tuple[str, ...] = ()  # empty: every format
    requires: tuple[str, ...] = ()
    tests: tuple[LineTest, ...] = ()
    origin: str | None = None  # "family:NAME" / "catalog:NAME" for expanded rules (the entry key: catalog_key)
    lookup: tuple[tuple[str, str], ...] = ()  # catalog entry fields merged into captures
    docs: str = ""
    kind: RuleKind = RuleKind.EXTRACTOR
    # the entry key of a rule expanded from a catalog (`XID[79]` -> "79"), set by the front-end that
    # expanded it; None for every other rule.  Never derive it from the name.
    catalog_key: str | None = None


class Accumulator:
    """Base class of extractor-accumulator state machines (Python plugins only).

    Created on a trigger line; `feed()` receives the following lines of the same
    observation (and the same rank, for rank-prefixed application logs) until it
    returns False; `finalize()` then returns the events to emit."""

    def __init__(self, ctx: Any, line: str, match: Mapping[str, str]):  # ctx: phases.AccumulatorContext
        self.ctx = ctx

    def feed(self, line: str) -> bool:  # pragma: no cover - interface
        return False

    def finalize(self) -> list["EventSpec"]:  # pragma: no cover - interface
        return []


@dataclass(frozen=True)
class AccumulatorRule:
    name: str
    author: str
    span: Span
    trigger_re: str
    factory: Callable[..., Accumulator]
    sources: tuple[str, ...] = ()
    formats: tuple[str, ...] = ()
    max_lines: int = 500
    requires: tuple[str, ...] = ()
    tests: tuple[LineTest, ...] = ()
    docs: str = ""
    symptoms: tuple[str, ...] = ()  # symptoms it may emit (declared, for checks)
    kind: RuleKind = RuleKind.ACCUMULATOR
    # the lowest priority: its trigger on a line that another rule explains is dropped in
    # extraction, and its events on lines that other events explain are dropped before the
    # filters (rulekit.engine.explained); a line-only accumulator (max_lines 0)
    fallback: bool = False

    @property
    def match_re(self) -> str:
        return self.trigger_re


@dataclass(frozen=True)
class PrioritizedRule:
    """What filters and refiners share: a priority (stratum + offset) and a function of
    the phase's context."""

    name: str
    author: str
    span: Span
    priority: int
    func: Callable[[Any], None]
    requires: tuple[str, ...] = ()
    docs: str = ""
    decl: Any = None  # declarative description when compiled from the DSL
    symptoms: tuple[str, ...] = ()  # symptoms it names (for reference checks)


@dataclass(frozen=True)
class FilterRule(PrioritizedRule):
    kind: RuleKind = RuleKind.FILTER
    selects: tuple[Any, ...] = ()  # the `Selection`s it reads (rulekit.rules.selection), when declared


@dataclass(frozen=True)
class RefinerRule(PrioritizedRule):
    kind: RuleKind = RuleKind.REFINER


@dataclass(frozen=True)
class CollectorRule:
    name: str
    author: str
    span: Span
    func: Callable[[Any], Any]
    requires: tuple[str, ...] = ()
    docs: str = ""
    decl: Any = None
    kind: RuleKind = RuleKind.COLLECTOR


# ---- metric rules ---------------------------------------------------------------

METRIC_AGGREGATES = ("value", "rate", "increase")
METRIC_OPS = (">", ">=", "<", "<=", "==", "!=")


@dataclass(frozen=True)
class MetricCondition:
    """`aggregate op threshold`, sustained for `for_s` seconds.

    aggregate: `value` (the sample), `rate` (per-second increase of a counter over
    `window_s`, counter resets handled as Prometheus does), `increase` (the
    counter's increase over `window_s`).  Without `window_s`, rate and increase
    look back to the previous sample."""

    aggregate: str
    op: str
    threshold: float
    for_s: float = 0.0
    window_s: float | None = None
    span: Span | None = None


@dataclass(frozen=True)
class MetricTest:
    """An inline test of a metric rule: one series' samples run through the rule alone."""

    samples: tuple[tuple[float, float], ...]
    expect: str  # an emit type or "nothing"
    symptom: str | None = None
    labels: tuple[tuple[str, str], ...] = ()
    node: str = "node-under-test"
    span: Span | None = None


@dataclass(frozen=True)
class MetricRule:
    """A declarative rule on metric series: when a series of `metric` (with these
    labels) meets `condition`, emit an event with `emit.symptom` on the series' node."""

    name: str
    author: str
    span: Span
    metric: str
    condition: MetricCondition
    emit: Emit
    labels: tuple[tuple[str, str], ...] = ()
    requires: tuple[str, ...] = ()
    tests: tuple[MetricTest, ...] = ()
    docs: str = ""
    kind: RuleKind = RuleKind.METRIC


Rule = ExtractorRule | AccumulatorRule | FilterRule | RefinerRule | CollectorRule | MetricRule


@dataclass(frozen=True)
class EventSpec:
    """An event a rule wants to add (accumulators, filters): the stream fills in the rest."""

    type: str  # key of EMIT_TYPES
    symptom: str | None = None
    node: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    line_num: int | None = None
    timestamp: str | None = None
    datum: str | None = None


@dataclass(frozen=True)
class ObservationSpec:
    """Observation text in a job-level test case."""

    source: str
    lines: tuple[str, ...]
    node: str | None = None
    format: str = "text"
    span: Span | None = None


@dataclass(frozen=True)
class MetricSpec:
    """A metric series in a job-level test case."""

    node: str
    name: str
    samples: tuple[tuple[float, float], ...]
    labels: tuple[tuple[str, str], ...] = ()
    span: Span | None = None


@dataclass(frozen=True)
class JobTestCase:
    """A job-level test: a few observations -> expected result (subset of fields).

    expect keys: outcome, sub_domain, root_cause (symptom), root_node, bad_nodes
    and interesting_nodes (exact lists), interesting_symptoms (present on interesting nodes), symptoms (must be present), absent_symptoms, ambiguous."""

    name: str
    job: Mapping[str, Any]
    observations: tuple[ObservationSpec, ...]
    expect: Mapping[str, Any]
    span: Span | None = None
    metrics: tuple[MetricSpec, ...] = ()


@dataclass
class RuleSet:
    """Everything the front-ends produced for one corpus, before validation."""

    rules: list[Rule] = field(default_factory=list)
    symptoms: list[Symptom] = field(default_factory=list)
    outcome_rules: list[OutcomeRule] = field(default_factory=list)
    job_tests: list[JobTestCase] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def extend(self, other: "RuleSet") -> None:
        self.rules.extend(other.rules)
        self.symptoms.extend(other.symptoms)
        self.outcome_rules.extend(other.outcome_rules)
        self.job_tests.extend(other.job_tests)
        self.files.extend(other.files)
