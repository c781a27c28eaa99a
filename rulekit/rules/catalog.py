"""Catalog expansion shared by the TOML and DSL front-ends: the pattern of one entry
(its key group filled, or, for a catalog keyed on several groups, each group filled
from the entry's field of that name and the branches it has no field for dropped),
and the symptom an entry registers when it carries `outcome`, `sub_domain`, `rank`
(and optionally `blame`, `action`, `docs`).  Pure: problems come back as
(code, message) for the front-end to place at its own span.  No I/O, no parsing of
rule files.
"""
from __future__ import annotations

from typing import Any, Mapping

from rulekit.rules.expand import expand_catalog_keys, expand_catalog_pattern, render, template_names
from rulekit.diagnostics import Span
from rulekit.rules.model import Symptom

ENTRY_EMIT_OVERRIDES = frozenset({"type", "symptom", "node"})
# fields of an entry that register the entry's symptom (outcome, sub_domain and rank required together)
ENTRY_SYMPTOM_FIELDS = frozenset({"outcome", "sub_domain", "rank", "blame", "action"})

Problem = tuple[str, str]  # (diagnostic code, message)


def lookup_fields(entry: Mapping[str, Any]) -> dict[str, str]:
    """An entry's fields usable in emit templates (and carried by its events): all but
    the emit overrides and the symptom fields."""
    return {str(f): str(v) for f, v in entry.items() if f not in ENTRY_EMIT_OVERRIDES and f not in ENTRY_SYMPTOM_FIELDS}


def entry_pattern(pattern: str, keys: list[str], key: str, lookup: Mapping[str, str],
                  what: str) -> tuple[str | None, Problem | None]:
    """The pattern of the entry `key` (its fields `lookup`): with one key group, its body
    replaced by the key; with several, the first filled by the key and each other one by
    the entry's field of that name, a group the entry has no field for dropped with its
    branch of the alternation."""
    if len(keys) == 1:
        return expand_catalog_pattern(pattern, keys[0], key), None
    expanded, bad = expand_catalog_keys(pattern, keys, {keys[0]: key, **lookup})
    if bad:
        return None, ("RK107", f"{what} has no {', '.join('`' + b + '`' for b in bad)}, and the group is not one "
                               f"branch of an alternation the entry could go without")
    if expanded is None:
        return None, ("RK107", f"{what} fills none of the key groups {', '.join('`' + k + '`' for k in keys)}")
    return expanded, None


def entry_symptom(entry: Mapping[str, Any], symptom_template: str | None, values: Mapping[str, str],
                  span: Span | None, what: str) -> tuple[Symptom | None, Problem | None]:
    """The symptom an entry registers (None, None when it has no symptom field): named by
    the emit symptom filled from the entry's own fields (a name that needs the line's
    captures cannot be registered), with the entry's outcome, sub_domain, rank, blame,
    action and docs."""
    if not ENTRY_SYMPTOM_FIELDS & entry.keys():
        return None, None
    if not symptom_template or any(f not in values for f in template_names(symptom_template)):
        return None, ("RK107", f"{what} registers a symptom, so its symptom name must come from the entry's "
                               f"own fields (not from the line)")
    name = render(symptom_template, values) or ""
    for f in ("outcome", "sub_domain", "rank"):
        if f not in entry:
            return None, ("RK102", f"{what} registers its symptom `{name}` and needs `{f}` too")
    rank = entry["rank"]
    if not isinstance(rank, int) or isinstance(rank, bool):
        return None, ("RK103", f"`rank` of {what} must be an integer")
    for f in ("outcome", "sub_domain", "blame", "action"):
        if f in entry and not isinstance(entry[f], str):
            return None, ("RK103", f"`{f}` of {what} must be a string")
    return Symptom(name=name, outcome=entry["outcome"], sub_domain=entry["sub_domain"], rank=rank,
                   docs=str(entry.get("docs") or ""), span=span, blame=entry.get("blame"),
                   action=entry.get("action")), None


def add_symptom(registered: dict[str, Symptom], sym: Symptom, what: str) -> Problem | None:
    """Keep `sym` (one per name: entries may share a symptom when they agree on it)."""
    prev = registered.get(sym.name)
    if prev is None:
        registered[sym.name] = sym
        return None
    if (prev.outcome, prev.sub_domain, prev.rank, prev.blame, prev.action) != (
            sym.outcome, sym.sub_domain, sym.rank, sym.blame, sym.action):
        return ("RK202", f"symptom `{sym.name}` of {what} is registered by an earlier entry with another outcome, "
                         f"sub_domain, rank, blame or action")
    return None
