"""Run-time behaviour of declarative DSL filters, refiners and collectors.

Each builder takes the rule's AST declaration and returns the closure stored in
`FilterRule.func` / `RefinerRule.func` / `CollectorRule.func`.  The closures act
only through the plugin context API (`EventStream`, `SymptomSet`) documented in
docs/rule-authoring.md; they never touch the store directly.  No parsing, no
diagnostics (the compiler validated the declaration already).

Symptom patterns: `"NAME"` matches that symptom exactly, `"PREFIX*"` every
symptom starting with PREFIX.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Iterable

from rulekit.rules.dsl import ast as A
from rulekit.rules.expand import render
from rulekit.rules.model import EventSpec
from rulekit.rules.selection import Selection

Matcher = Callable[[Any], bool]


def matcher(patterns: Iterable[str]) -> Matcher:
    """A predicate on symptom names for a list of patterns (empty list: everything)."""
    pats = list(patterns)
    if not pats:
        return lambda s: True
    exact = frozenset(p for p in pats if not p.endswith("*"))
    prefixes = tuple(p[:-1] for p in pats if p.endswith("*"))
    return lambda s: isinstance(s, str) and (s in exact or (bool(prefixes) and s.startswith(prefixes)))


def _vals(strs: list[A.Str]) -> list[str]:
    return [s.value for s in strs]


# ---- filters --------------------------------------------------------------------------

DEFAULT_FILTER_TYPE = {"demote": "bad_node", "promote": "interesting_node", "discard": None}


def filter_selections(step: "A.FilterAction | A.PerNode") -> tuple[Selection, Selection | None]:
    """What one filter step reads, compiled once: (its candidates, the events its
    `when` / `unless` condition looks for)."""
    if isinstance(step, A.PerNode):
        return Selection.of(step.event_type.value if step.event_type else "bad_node", _vals(step.patterns)), None
    etype = step.event_type.value if step.event_type else DEFAULT_FILTER_TYPE[step.action]
    cond = step.condition
    return (Selection.of(etype, _vals(step.patterns)),
            Selection.of("bad_node", _vals(cond.patterns)) if cond is not None else None)


def decl_selections(decl: A.FilterDecl) -> tuple[Selection, ...]:
    """Everything a DSL filter reads, once each (its `FilterRule.selects`)."""
    sels = [s for c in decl.clauses if isinstance(c, (A.FilterAction, A.PerNode))
            for s in filter_selections(c) if s is not None]
    return tuple(dict.fromkeys(sels))


def build_filter(decl: A.FilterDecl, rule_name: str) -> Callable[[Any], None]:
    steps = [(c, *filter_selections(c)) for c in decl.clauses if isinstance(c, (A.FilterAction, A.PerNode))]

    def run(context: Any) -> None:
        stream = context.event_stream
        for step, sel, cond_sel in steps:
            if isinstance(step, A.FilterAction):
                _filter_action(stream, step, rule_name, sel, cond_sel)
            else:
                _per_node(stream, step, rule_name, sel)

    run.__doc__ = decl_docs(decl)
    return run


def _filter_action(stream: Any, act: A.FilterAction, rule: str, sel: Selection, cond_sel: Selection | None) -> None:
    nodes = set(_vals(act.nodes))
    cands = [e for e in stream.select(sel) if not nodes or e.node in nodes]
    reason = describe_filter_action(act)
    cond = act.condition
    if cond is not None and cond_sel is not None and cands:
        present = stream.select(cond_sel)

        def holds(e: Any) -> bool:
            found = any(p.id != e.id and (cond.scope != "same_node" or p.node == e.node) for p in present)
            return found != cond.negate

        cands = [e for e in cands if holds(e)]
    if cands:
        getattr(stream, act.action)(cands, rule=rule, reason=reason)


def _per_node(stream: Any, step: A.PerNode, rule: str, sel: Selection) -> None:
    groups: dict[str, list[Any]] = {}
    for e in stream.select(sel):
        if e.node is not None:
            groups.setdefault(e.node, []).append(e)
    least = step.at_least.value if step.at_least else 1
    for node, evs in groups.items():
        if len(evs) < least:
            continue
        values = {"node": node, "count": len(evs), "symptom": evs[0].symptom,
                  "symptoms": ",".join(sorted({e.symptom for e in evs if e.symptom}))}
        reason = f"{len(evs)} events matching {', '.join(_vals(step.patterns))} on {node}"
        for stmt in step.body:
            if isinstance(stmt, A.GroupAdd):
                fields = {p.key.value: render(str(A.plain(p.value)), values) for p in (stmt.fields.pairs if stmt.fields else [])}
                spec = EventSpec(type=stmt.type.value, symptom=render(stmt.symptom.value, values) if stmt.symptom else None,
                                 node=node, fields=fields)
                stream.add(spec, rule=rule, cause=evs[0], reason=reason)
            else:
                getattr(stream, stmt.action)(evs, rule=rule, reason=reason)


def describe_filter_action(act: A.FilterAction) -> str:
    what = ", ".join(_vals(act.patterns)) or "every event"
    s = f"{act.action} {what}"
    if act.nodes:
        s += f" on node {', '.join(_vals(act.nodes))}"
    if act.condition:
        c = act.condition
        s += f" {'unless' if c.negate else 'when'} {', '.join(_vals(c.patterns))}"
        if c.scope == "same_node":
            s += " on the same node"
    return s


# ---- refiners -------------------------------------------------------------------------

def build_refiner(decl: A.RefinerDecl, rule_name: str, job_wide: bool) -> Callable[[Any], None]:
    """job_wide: FINAL / POST_OUTCOME (context.symptoms is the job-wide set and
    context.my_bad_nodes the per-node sets); else SCRUB (context.symptoms is one node's set)."""
    steps = [c for c in decl.clauses if isinstance(c, (A.RefineWhen, A.RefineAlways, A.Prefer, A.OutcomeWhen))]

    def run(context: Any) -> None:
        top = context.symptoms
        if top is None:
            return
        nodes = list((getattr(context, "my_bad_nodes", None) or {}).values()) if job_wide else []
        for step in steps:
            if isinstance(step, A.RefineWhen):
                _refine_when(top, nodes, step, rule_name, job_wide)
            elif isinstance(step, A.OutcomeWhen):
                _outcome_when(context, top, step, rule_name)
            elif isinstance(step, A.RefineAlways):
                _act(step.action, [top, *nodes], matcher(_vals(step.targets)), lambda s: False, rule_name,
                     f"{step.action} {', '.join(_vals(step.targets))}")
            else:
                _prefer(top, nodes, step, rule_name)

    run.__doc__ = decl_docs(decl)
    return run


def _holds(sset: Any, step: A.RefineWhen) -> bool:
    have = list(sset.symptoms())
    pats = _vals(step.patterns)
    if step.quant == "all":
        found = all(any(matcher([p])(s) for s in have) for p in pats)
    else:
        m = matcher(pats)
        found = any(m(s) for s in have)
    return found != step.negate


def _act(action: str, sets: list[Any], target: Matcher, keep: Matcher, rule: str, reason: str) -> None:
    for sset in sets:
        for s in [s for s in sset.symptoms() if target(s) and not keep(s)]:
            getattr(sset, action)(s, rule=rule, reason=reason)


def _refine_when(top: Any, nodes: list[Any], step: A.RefineWhen, rule: str, job_wide: bool) -> None:
    target = matcher(_vals(step.targets))
    keep = matcher(_vals(step.patterns))  # never act on the symptoms that triggered the rule
    reason = f"{'unless' if step.negate else 'when'} {step.quant or 'any'} {', '.join(_vals(step.patterns))}"
    if step.scope == "same_node":
        reason += " on the same node"
        per_node = nodes if job_wide else [top]
        hit = False
        for sset in per_node:
            if _holds(sset, step):
                hit = True
                _act(step.action, [sset], target, keep, rule, reason)
        if job_wide and hit:  # a symptom left on no node leaves the job-wide set too
            remaining = {s for n in nodes for s in n.symptoms()}
            for s in [s for s in top.symptoms() if target(s) and not keep(s) and s not in remaining]:
                getattr(top, step.action)(s, rule=rule, reason=reason)
        return
    if _holds(top, step):
        _act(step.action, [top, *nodes], target, keep, rule, reason)


def _outcome_when(context: Any, top: Any, step: A.OutcomeWhen, rule: str) -> None:
    decision = getattr(context, "outcome", None)
    if decision is None:
        return
    if (decision.outcome in {w.value for w in step.outcomes}) == step.negate:
        return
    if step.patterns:
        have = list(top.symptoms())
        pats = _vals(step.patterns)
        if step.quant == "all":
            found = all(any(matcher([p])(s) for s in have) for p in pats)
        else:
            found = any(matcher(pats)(s) for s in have)
        if not found:
            return
    changes = {"outcome": step.set_outcome.value}
    if step.set_sub_domain is not None:
        changes["sub_domain"] = step.set_sub_domain.value
    decision.set(rule, **changes)


def _prefer(top: Any, nodes: list[Any], step: A.Prefer, rule: str) -> None:
    order = _vals(step.order)
    have = list(top.symptoms())
    for i, p in enumerate(order):
        if any(matcher([p])(s) for s in have):
            later = matcher(order[i + 1:]) if order[i + 1:] else (lambda s: False)
            _act("demote", [top, *nodes], later, matcher([p]), rule, f"{p} is preferred")
            return


# ---- collectors -----------------------------------------------------------------------

EVENT_ATTRS = ("node", "symptom", "rule", "source", "format", "line_num", "timestamp", "datum", "event_type")


def build_collector(decl: A.CollectorDecl) -> Callable[[Any], Any]:
    steps = [c for c in decl.clauses if isinstance(c, A.GatherClause)]

    def run(context: Any) -> list[Any]:
        stream = context.event_stream
        out: list[Any] = []
        for g in steps:
            out.extend(_gather(stream, g))
        return out

    run.__doc__ = decl_docs(decl)
    return run


def _gather(stream: Any, g: A.GatherClause) -> list[Any]:
    etype = g.event_type.value if g.event_type else None
    events = stream.query(event_type=etype) if etype else stream.query()
    match = matcher(_vals(g.patterns))
    names = [f.value for f in g.fields]
    seen: set[str] = set()
    out: list[Any] = []
    for e in events:
        if not match(e.symptom) and g.patterns:
            continue
        row = {}
        for n in names:
            v = getattr(e, n, None) if n in EVENT_ATTRS else (e.fields or {}).get(n)
            row[n] = v
        if all(v is None for v in row.values()):
            continue
        item = row[names[0]] if len(names) == 1 else row
        if g.unique:
            key = json.dumps(item, sort_keys=True, default=str)
            if key in seen:
                continue
            seen.add(key)
        out.append(item)
    return out


def decl_docs(decl: A.Decl) -> str:
    d = decl.first(A.DocsClause)
    return d.value.value if isinstance(d, A.DocsClause) else ""
