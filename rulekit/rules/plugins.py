"""The Python plugin API for rule files: decorators and symptom registration.

A `.py` rule file is executed by the loader with these decorators bound to it
(through a context variable), so `@filter_def(...)`, `@refiner_def(...)`,
`@collector_def(...)`, `@accumulator_def(...)` and `register_symptom(...)` add
rules and symptoms to the corpus being loaded.  Also the small helpers rule
bodies share (demote by symptom, discard a cascade).  Used outside a loader the
decorators raise a clear error.
"""
from __future__ import annotations

import sys
from contextvars import ContextVar
from dataclasses import field
from typing import Any, Callable, Iterable, Sequence

from rulekit.rules.records import dataclass
from rulekit.diagnostics import Span
from rulekit.rules.selection import Selection
from rulekit.extract.errorline import ErrorLine, reads_as_error, vocabulary as error_vocabulary
from rulekit.rules.model import (
    Accumulator,
    AccumulatorRule,
    CollectorRule,
    EventSpec,
    FilterPriority,
    FilterRule,
    LineTest,
    RefinerPriority,
    RefinerRule,
    Symptom,
)

__all__ = [
    "Accumulator", "EventSpec", "FilterPriority", "RefinerPriority", "Selection",
    "filter_def", "refiner_def", "collector_def", "accumulator_def", "register_symptom",
    "demote_bad_by_symptom", "demote_bad_by_prefix", "demote_where", "discard_cascade",
    "ErrorLine", "reads_as_error", "error_vocabulary",
]


@dataclass
class PluginSink:
    """Where the decorators of the file being executed put what they declare."""

    file: str
    rules: list = field(default_factory=list)
    symptoms: list[Symptom] = field(default_factory=list)


_ACTIVE: ContextVar[PluginSink | None] = ContextVar("rulekit_plugin_sink", default=None)


def _sink() -> PluginSink:
    sink = _ACTIVE.get()
    if sink is None:
        raise RuntimeError("rulekit rule decorators only work in rule files loaded by rulekit's RuleLoader")
    return sink


def _span_of(obj: Any) -> Span:
    code = getattr(obj, "__code__", None)
    if code is None and isinstance(obj, type):
        init = obj.__dict__.get("feed") or obj.__dict__.get("__init__")
        code = getattr(init, "__code__", None)
    sink = _ACTIVE.get()
    if code is not None:
        line = code.co_firstlineno
        if isinstance(obj, type):
            line = _class_line(obj, code.co_filename) or line
        return Span(sink.file if sink else code.co_filename, line, 1, line, 1)
    return Span(sink.file if sink else "<plugin>", 1, 1)


def _class_line(cls: type, filename: str) -> int | None:
    try:
        import linecache

        for i, text in enumerate(linecache.getlines(filename), start=1):
            if text.lstrip().startswith(f"class {cls.__name__}"):
                return i
    except Exception:
        return None
    return None


def _caller_span(depth: int = 2) -> Span:
    frame = sys._getframe(depth)
    sink = _ACTIVE.get()
    return Span(sink.file if sink else frame.f_code.co_filename, frame.f_lineno, 1, frame.f_lineno, 1)


def _priority_value(priority: Any, strata: type) -> Any:
    if isinstance(priority, str) and priority.upper() in strata.__members__:
        return int(strata[priority.upper()])
    return priority


def filter_def(*, name: str, author: str, priority: Any, requires: Sequence[str] = (),
               symptoms: Sequence[str] = (), selects: "Selection | Iterable[Selection]" = ()) -> Callable:
    """Declare a filter: `fn(context: FilterContext) -> None`.  `selects`: what it reads
    (`Selection.of(types, patterns)`); `context.selected()` then returns those events,
    answered from the stream's symptom index."""
    sels = (selects,) if isinstance(selects, Selection) else tuple(selects)
    if not all(isinstance(s, Selection) for s in sels):
        raise TypeError(f"@filter_def({name!r}): selects= takes Selection.of(types, patterns) values")

    def deco(fn: Callable) -> Callable:
        _sink().rules.append(FilterRule(
            name=name, author=author, span=_span_of(fn), priority=_priority_value(priority, FilterPriority),
            func=fn, requires=tuple(requires), docs=(fn.__doc__ or "").strip(), symptoms=tuple(symptoms),
            selects=sels))
        return fn

    return deco


def refiner_def(*, name: str, author: str, priority: Any, requires: Sequence[str] = (),
                symptoms: Sequence[str] = ()) -> Callable:
    """Declare a refiner: `fn(context: RefinerContext) -> None`."""

    def deco(fn: Callable) -> Callable:
        _sink().rules.append(RefinerRule(
            name=name, author=author, span=_span_of(fn), priority=_priority_value(priority, RefinerPriority),
            func=fn, requires=tuple(requires), docs=(fn.__doc__ or "").strip(), symptoms=tuple(symptoms)))
        return fn

    return deco


def collector_def(*, name: str, author: str, requires: Sequence[str] = ()) -> Callable:
    """Declare a collector: `fn(context: CollectorContext) -> JSON-able value`,
    reported under `collectors[name]`."""

    def deco(fn: Callable) -> Callable:
        _sink().rules.append(CollectorRule(
            name=name, author=author, span=_span_of(fn), func=fn, requires=tuple(requires),
            docs=(fn.__doc__ or "").strip()))
        return fn

    return deco


def accumulator_def(*, name: str, author: str, trigger_re: str, sources: Sequence[str] = (),
                    formats: Sequence[str] = (), max_lines: int = 500, symptoms: Sequence[str] = (),
                    tests: Iterable[dict] = (), requires: Sequence[str] = (), fallback: bool = False) -> Callable:
    """Declare an extractor-accumulator: a subclass of `Accumulator`.

    `tests`: dicts like the TOML inline tests; `line` may hold several lines
    separated by newlines (the first is the trigger).  `fallback=True` (with
    `max_lines=0`): the lowest priority, for generic evidence; its trigger on a line
    another rule explains is dropped, and so are its events on lines other events
    explain (docs/rule-authoring.md, "Fallback rules")."""
    if fallback and max_lines != 0:
        raise ValueError(f"@accumulator_def({name!r}): a fallback reads its trigger line alone (max_lines=0)")

    def deco(cls: type) -> type:
        if not (isinstance(cls, type) and issubclass(cls, Accumulator)):
            raise TypeError(f"@accumulator_def({name!r}) must decorate a subclass of rulekit.plugin.Accumulator")
        span = _span_of(cls)
        line_tests = tuple(
            LineTest(line=t["line"], expect=t.get("expect", "bad_node"), symptom=t.get("symptom"),
                     node=t.get("node"), captures=tuple(sorted((t.get("captures") or {}).items())),
                     source=t.get("source"), format=t.get("format"), span=span)
            for t in tests)
        _sink().rules.append(AccumulatorRule(
            name=name, author=author, span=span, trigger_re=trigger_re, factory=cls,
            sources=tuple(sources), formats=tuple(formats), max_lines=max_lines, requires=tuple(requires),
            tests=line_tests, docs=(cls.__doc__ or "").strip(), symptoms=tuple(symptoms), fallback=fallback))
        return cls

    return deco


def register_symptom(name: str, *, outcome: str, sub_domain: str, rank: int, docs: str = "",
                     aliases: Sequence[str] = (), blame: str | None = None, action: str | None = None) -> None:
    """Register a symptom (same fields as a TOML `[[symptom]]` table)."""
    _sink().symptoms.append(Symptom(name=name, outcome=outcome, sub_domain=sub_domain, rank=rank,
                                    docs=docs, aliases=tuple(aliases), span=_caller_span(),
                                    blame=blame, action=action))


# ---- helpers shared by rule bodies -------------------------------------------------

def demote_bad_by_symptom(stream: Any, symptoms: Iterable[str], rule: str | None = None, reason: str = "") -> int:
    """Demote every bad-node event whose symptom is in `symptoms`; returns the count.
    `rule`: recorded as the author (default: the filter running now)."""
    wanted = frozenset(symptoms)
    events = [e for e in stream.bad_events() if e.symptom in wanted]
    stream.demote(events, rule=rule, reason=reason or f"symptom in {sorted(wanted)}")
    return len(events)


def demote_bad_by_prefix(stream: Any, prefixes: Iterable[str], rule: str | None = None, reason: str = "",
                         nodes: Iterable[str] | None = None) -> int:
    """Demote bad-node events whose symptom starts with one of `prefixes`
    (optionally only on `nodes`); returns the count."""
    pre = tuple(prefixes)
    keep_nodes = set(nodes) if nodes is not None else None
    events = [e for e in stream.bad_events()
              if e.symptom and e.symptom.startswith(pre) and (keep_nodes is None or e.node in keep_nodes)]
    stream.demote(events, rule=rule, reason=reason or f"symptom prefix in {list(pre)}")
    return len(events)


def demote_where(symptoms: Any, registry: Any, predicate: Callable[[str, Any], bool], rule: str, reason: str,
                 keep: Iterable[str] = ()) -> list[str]:
    """Demote every active symptom not in `keep` for which `predicate(symptom, info)`
    holds (`info`: the registry's outcome / sub_domain / rank); returns them."""
    kept = set(keep)
    gone = [s for s in symptoms.symptoms() if s not in kept and predicate(s, registry.info(s))]
    for s in gone:
        symptoms.demote(s, rule, reason)
    return gone


def discard_cascade(symptoms: Any, my_bad_nodes: Any, prefixes: Iterable[str], rule: str,
                    reason: str = "") -> list[str]:
    """Discard every symptom starting with one of `prefixes` from the job-wide set
    and from each node's set (the spec's `_discard_xid_cascade_from_symptoms_and_nodes`)."""
    pre = tuple(prefixes)
    gone = [s for s in symptoms.symptoms() if s.startswith(pre)]
    for s in gone:
        symptoms.discard(s, rule=rule, reason=reason)
    for node_set in (my_bad_nodes or {}).values():
        for s in [s for s in node_set.symptoms() if s.startswith(pre)]:
            node_set.discard(s, rule=rule, reason=reason)
    return gone
