"""Which lines a rule explains, for the fallback rules (`AccumulatorRule.fallback`: the
generic evidence of a line no other rule reads).

Two places decide it.  In extraction, a line is explained when another rule reads it:
an extractor's hit (whatever it emits: a rule that takes only data from a line has
judged it), or a line-only accumulator that made an event (`rule_role` says which rule is which; a
fallback's hit comes last on its line, so its line is decided by then, in this
process and in a scan worker alike, and a fallback hit there is dropped before it is
counted against any cap).  An accumulator that reads following lines is known to
explain them only when it ends: its events carry `span_end`, the last line it took
in, and `drop_explained` discards, before the filters run, every fallback event on a
line of the same observation (and rank) that such a span, or any other event's own
line, covers.  Reads events, writes only discards (each with its reason); no rule
knowledge beyond the roles.
"""
from __future__ import annotations

from typing import Any, Iterable

# what a rule's hit says of its line
ROLE_EXPLAINS = "explains"  # an extractor: its hit explains the line
ROLE_LINE_ONLY = "line_only"  # a line-only accumulator: explains the line when it makes an event
ROLE_FALLBACK = "fallback"  # a fallback: dropped on an explained line


def rule_role(rule: Any) -> str | None:
    """ROLE_EXPLAINS, ROLE_LINE_ONLY, ROLE_FALLBACK, or None (an accumulator reading
    following lines, whose reading is known when it ends)."""
    if getattr(rule, "trigger_re", None) is not None:  # an accumulator
        if getattr(rule, "fallback", False):
            return ROLE_FALLBACK
        return ROLE_LINE_ONLY if rule.max_lines < 1 else None
    return ROLE_EXPLAINS


def explained_fallbacks(events: Iterable[Any], fallback_rules: frozenset[str]) -> list[tuple[Any, str]]:
    """(fallback event, why it is explained) for each fallback event whose line another
    event of the same observation has as its own line, or that lies inside the span
    (trigger line to `span_end`, same rank) of an accumulator's event."""
    generic, lines, spans = [], {}, {}
    for e in events:
        if e.line_num is None or e.obs_context_id is None:
            continue
        if e.rule in fallback_rules:
            generic.append(e)
            continue
        lines.setdefault((e.obs_context_id, e.line_num), e.rule)
        end = e.fields.get("span_end")
        if isinstance(end, int) and end > e.line_num:
            spans.setdefault(e.obs_context_id, []).append((e.line_num, end, e.fields.get("rank"), e.rule))
    out = []
    for g in generic:
        by = lines.get((g.obs_context_id, g.line_num))
        if by is not None:
            out.append((g, f"line {g.line_num} is read by {by}"))
            continue
        rank = g.fields.get("rank")
        for lo, hi, r, rule in spans.get(g.obs_context_id, ()):
            if lo <= g.line_num <= hi and (r is None or rank is None or r == rank):
                out.append((g, f"line {g.line_num} is inside what {rule} read (lines {lo}-{hi})"))
                break
    return out


def drop_explained(stream: Any, fallback_rules: frozenset[str]) -> int:
    """Discard the fallback events that other events explain (`explained_fallbacks`),
    each recorded with its reason under its own rule; returns how many."""
    if not fallback_rules:
        return 0
    gone = explained_fallbacks(stream.query(), fallback_rules)
    for e, why in gone:
        stream.discard([e], rule=e.rule, reason=why)
    return len(gone)
