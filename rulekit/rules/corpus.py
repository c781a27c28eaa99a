"""The RuleEngine: an immutable, validated corpus organised for execution.

Rules by phase (extractors, accumulators, metric rules, filters and refiners
in priority order, collectors), the symptom registry, compiled patterns and one scanner
(acceleration structure) per (source, format) combination, built on first use
and cached.  Built only by `rulekit.rules.loader`; holds no per-job state.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Hashable, Sequence, TypeVar

from rulekit.rules.records import dataclass
from rulekit.config import EngineOptions, GlobalConfig
from rulekit.rules.model import (
    AccumulatorRule,
    CollectorRule,
    ExtractorRule,
    FilterRule,
    MetricRule,
    RefinerRule,
    Rule,
    RuleSet,
)
from rulekit.rules.registry import SymptomRegistry
from rulekit.extract.scan import Scanner, make_scanner

T = TypeVar("T")
_MISSING: Any = object()


@dataclass(frozen=True)
class ScanPlan:
    """The scanner for one (source, format) and the rule behind each pattern index."""

    scanner: Scanner
    rules: tuple[ExtractorRule | AccumulatorRule, ...]


class RuleEngine:
    def __init__(self, ruleset: RuleSet, registry: SymptomRegistry, config: GlobalConfig | None = None,
                 options: EngineOptions | None = None):
        self.ruleset = ruleset
        self.registry = registry
        self.config = config or GlobalConfig()
        # how it runs (scanner, caches, store sizes, caps): given by the edge, else the environment's
        self.options = options or EngineOptions.from_env()
        rules = list(ruleset.rules)
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.by_name: dict[str, Rule] = {r.name: r for r in rules}
        self.extractors = tuple(r for r in rules if isinstance(r, ExtractorRule))
        self.accumulators = tuple(r for r in rules if isinstance(r, AccumulatorRule))
        # stable: equal priorities keep load order (file name order, then position)
        self.filters = tuple(sorted((r for r in rules if isinstance(r, FilterRule)), key=lambda r: r.priority))
        self.refiners = tuple(sorted((r for r in rules if isinstance(r, RefinerRule)), key=lambda r: r.priority))
        self.collectors = tuple(r for r in rules if isinstance(r, CollectorRule))
        self.metric_rules = tuple(r for r in rules if isinstance(r, MetricRule))
        self.job_tests = tuple(ruleset.job_tests)
        self._plans: dict[tuple[str, str], ScanPlan] = {}
        self._all: list[ScanPlan] = []  # the plan over every rule, once built (a list: shared with twins)
        self._rule_plans: dict[tuple[str, ...], ScanPlan] = {}
        self._position: dict[int, int] | None = None  # id(rule) -> its index in the plan over every rule
        self._by_origin: dict[str, tuple[ExtractorRule, ...]] | None = None
        self._derived: dict[Hashable, Any] = {}  # `derived`: what sessions read of the rules, worked out once
        self._lock = threading.Lock()

    def with_options(self, **changes: object) -> "RuleEngine":
        """This engine run with other options (`EngineOptions.with_`): the same rules,
        plans and caches, shared; this engine is unchanged."""
        if {"scanner", "cache_dir"} & changes.keys():
            raise ValueError("a twin shares the scan plans: it cannot change how they are built")
        if all(getattr(self.options, k) == v for k, v in changes.items()):
            return self
        twin = object.__new__(type(self))  # (not copy.copy: it would pickle, and engines refuse)
        twin.__dict__.update(self.__dict__)
        twin.options = self.options.with_(**changes)
        return twin

    def rule_names(self) -> list[str]:
        return [r.name for r in self.rules]

    def derived(self, key: Hashable, build: Callable[[], T]) -> T:
        """`build()`, a value worked out from the rules alone (never from a job), once per
        corpus: what every session would otherwise work out again (a server answers
        hundreds of small jobs a second).  Twins (`with_options`) share it."""
        got = self._derived.get(key, _MISSING)
        if got is _MISSING:
            got = self._derived.setdefault(key, build())
        return got

    def scan_plan(self, source: str, fmt: str) -> ScanPlan:
        key = (source, fmt)
        plan = self._plans.get(key)
        if plan is None:
            with self._lock:
                plan = self._plans.get(key)
                if plan is None:
                    plan = self._build_plan(source, fmt)
                    self._plans[key] = plan
        return plan

    def _build_plan(self, source: str, fmt: str) -> ScanPlan:
        """One acceleration structure over every extractor, built once; a plan for a
        (source, format) only drops the hits of rules whose filters exclude it."""
        if not self._all:
            # fallbacks last: on a line, every other rule's hit comes before theirs (hits are in
            # (line, pattern) order), so extraction knows whether the line is explained
            rules = (*self.extractors, *(a for a in self.accumulators if not a.fallback),
                     *(a for a in self.accumulators if a.fallback))
            self._all.append(ScanPlan(make_scanner([r.match_re for r in rules], backend=self.options.scanner,
                                                   cache_dir=self.options.cache_dir), tuple(rules)))
        every = self._all[0]
        allowed = frozenset(i for i, r in enumerate(every.rules) if applies(r, source, fmt))
        if len(allowed) == len(every.rules):
            return every
        return ScanPlan(_FilteredScanner(every.scanner, allowed), every.rules)

    def scanner_for_rules(self, rules: Sequence[ExtractorRule | AccumulatorRule]) -> ScanPlan:
        """A plan over chosen rules (inline tests, the language server), cached by rule
        names: a catalog's tests all run through the same rules."""
        key = tuple(r.name for r in rules)
        plan = self._rule_plans.get(key)
        if plan is None:
            plan = self._narrowed(rules) or ScanPlan(make_scanner([r.match_re for r in rules],
                                                                  backend=self.options.scanner,
                                                                  cache_dir=self.options.cache_dir), tuple(rules))
            with self._lock:
                self._rule_plans[key] = plan
        return plan

    def _narrowed(self, rules: Sequence[ExtractorRule | AccumulatorRule]) -> ScanPlan | None:
        """The plan over every rule, once it is built, keeping only these rules' hits: the
        hits a scanner of their own finds, in the same order (they are this corpus's
        rules, in its order), without building one (~3 ms each, and `rulekit test` runs
        hundreds).  None when it is not built yet or these are not the corpus's rules."""
        if not self._all:
            return None
        every = self._all[0]
        at = self._position
        if at is None:  # built once: tests narrow to their rules hundreds of times
            at = self._position = {id(r): i for i, r in enumerate(every.rules)}
        picked = [at.get(id(r), -1) for r in rules]
        if -1 in picked or picked != sorted(picked):
            return None
        return ScanPlan(_FilteredScanner(every.scanner, frozenset(picked)), every.rules)

    def rules_of_origin(self, origin: str) -> tuple[ExtractorRule, ...]:
        """The extractors expanded from one catalog or family (`origin`), in corpus
        order; the map is built once."""
        by = self._by_origin
        if by is None:
            found: dict[str, list[ExtractorRule]] = {}
            for r in self.extractors:
                if r.origin:
                    found.setdefault(r.origin, []).append(r)
            by = self._by_origin = {k: tuple(v) for k, v in found.items()}
        return by.get(origin, ())

    def __getstate__(self) -> dict:
        # engines are shared with worker processes by rebuilding from paths, not pickling
        raise TypeError("RuleEngine is not picklable; rebuild it in the worker with load_corpus(paths)")


class _FilteredScanner:
    """The shared scanner, keeping only the hits of the rules allowed for one source."""

    def __init__(self, inner: Scanner, allowed: frozenset[int]):
        self.inner = inner
        self.allowed = allowed
        from rulekit.extract.accel import Accelerator  # imported by make_scanner already

        self._narrows = isinstance(inner, Accelerator)

    def scan(self, chunk: bytes) -> list:
        allowed = self.allowed
        if self._narrows:  # the accelerator never confirms the other rules' candidates
            return self.inner.scan(chunk, allowed)
        return [h for h in self.inner.scan(chunk) if h[2] in allowed]


def applies(rule: ExtractorRule | AccumulatorRule, source: str, fmt: str) -> bool:
    return (not rule.sources or source in rule.sources) and (not rule.formats or fmt in rule.formats)
