"""Hover: what a symptom, rule or regex under the cursor means in this corpus.

Symptom: outcome, sub_domain, rank, blame and action, docs, aliases, where it is registered and the
rules that emit it.  Rule: type, stratum, location, docs and test status.
Regex (inside an extractor's pattern): the required literals the acceleration
structure extracted and what the prefilter does with the rule.  A diagnostic
code in the text (`RK203`, e.g. in a suppression comment): the code's docs.
Pure: no LSP types, no I/O.
"""
from __future__ import annotations

import re
from functools import lru_cache

from rulekit.codes import CODES
from rulekit.diagnostics import Span
from rulekit.rules.model import FilterPriority, RefinerPriority, RuleKind, stratum_of
from rulekit_lsp.features import HoverResult
from rulekit_lsp.occurrences import RULE, SYMPTOM
from rulekit_lsp.workspace import Corpus


def hover(corpus: Corpus, path: str, line: int, col: int) -> HoverResult | None:
    hit = corpus.occurrence_at(path, line, col)
    if hit is not None:
        kind, occ = hit
        md = symptom_markdown(corpus, occ.name) if kind == SYMPTOM else rule_markdown(corpus, occ.name)
        if md:
            return HoverResult(md, occ.span)
    rx = regex_at(corpus, path, line, col)
    if rx is not None:
        rule, span = rx
        return HoverResult(regex_markdown(rule.match_re, rule.name), span)
    st = corpus.files.get(path)
    if st is not None:
        lines = st.text.split("\n")
        if 0 < line <= len(lines):
            for m in re.finditer(r"RK\d{3}", lines[line - 1]):
                if m.start() < col <= m.end() + 1 and m.group() in CODES:
                    c = CODES[m.group()]
                    return HoverResult(f"**{c.code} {c.name}** ({c.severity})\n\n{c.summary}\n\n{c.doc}",
                                       Span(path, line, m.start() + 1, line, m.end() + 1))
    return None


def emitters(corpus: Corpus, name: str) -> list[str]:
    """Rules that emit (or name, for filters/accumulators) a symptom."""
    a = corpus.analyze()
    canon = a.registry.canonical(name)
    out = []
    for r in a.rules.values():
        emit = getattr(r, "emit", None)
        sym = emit.symptom if emit is not None else None
        if sym and (sym == canon or sym == name or (
                "{" in sym and canon.startswith(sym.split("{", 1)[0]) and sym.split("{", 1)[0])):
            out.append(r.name)
        elif name in getattr(r, "symptoms", ()) or canon in getattr(r, "symptoms", ()):
            out.append(r.name)
    return out


def symptom_markdown(corpus: Corpus, name: str) -> str | None:
    a = corpus.analyze()
    reg = a.registry
    info = reg.info(name)
    s = reg.symptom(name)
    head = f"**symptom `{info.name}`**" + (f" (alias `{name}`)" if info.name != name else "")
    if s is None and not reg.is_known(name):
        return f"**symptom `{name}`**: not registered (RK203)"
    lines = [head, "", f"- outcome: `{info.outcome}`", f"- sub_domain: `{info.sub_domain}`", f"- rank: {info.rank}",
             f"- blame: `{info.blame or 'not set (RK208)'}`" + (f", action `{info.action}`" if info.action != "none" else "")]
    if s is not None:
        if s.aliases:
            lines.append("- aliases: " + ", ".join(f"`{x}`" for x in s.aliases))
        if s.span:
            lines.append(f"- registered at `{_where(s.span)}`")
    else:
        r = reg.prefix_rule(name)
        lines.append(f"- from outcome rule prefix `{r.prefix}`" if r else "- not registered")
    em = emitters(corpus, name)
    lines.append("- emitted by: " + (", ".join(f"`{x}`" for x in em[:20]) + (" ..." if len(em) > 20 else "")
                                     if em else "no rule"))
    if info.docs:
        lines += ["", info.docs]
    return "\n".join(lines)


def stratum_text(rule) -> str | None:
    if rule.kind is RuleKind.FILTER:
        strata = FilterPriority
    elif rule.kind is RuleKind.REFINER:
        strata = RefinerPriority
    else:
        return None
    p = rule.priority
    if not isinstance(p, int):
        return f"invalid priority {p!r}"
    s = stratum_of(p, strata)
    if s is None:
        return f"{p} (outside the strata)"
    off = p - int(s)
    return f"{s.name}" + (f" + {off}" if off else "") + f" ({p})"


def rule_markdown(corpus: Corpus, name: str) -> str | None:
    a = corpus.analyze()
    rule = a.rules.get(name)
    if rule is None:
        family = [r for r in a.rules.values() if r.name.startswith(name + ".") or r.name.startswith(name + "[")]
        if family:
            return f"**{family[0].kind.value} group `{name}`**: {len(family)} expanded rule(s): " + \
                ", ".join(f"`{r.name}`" for r in family[:10]) + (" ..." if len(family) > 10 else "")
        return f"**rule `{name}`**: not defined"
    lines = [f"**{rule.kind.value} `{rule.name}`**", ""]
    st = stratum_text(rule)
    if st:
        lines.append(f"- stratum: {st}")
    lines.append(f"- author: {rule.author}")
    lines.append(f"- defined at `{_where(rule.span)}`")
    if getattr(rule, "origin", None):
        lines.append(f"- expanded from `{rule.origin}`")
    emit = getattr(rule, "emit", None)
    if emit is not None:
        lines.append(f"- emits: `{emit.type}`" + (f" `{emit.symptom}`" if emit.symptom else ""))
    if getattr(rule, "requires", ()):
        lines.append("- requires: " + ", ".join(f"`{x}`" for x in rule.requires))
    tests = getattr(rule, "tests", ())
    summary = corpus.test_summary([rule.name])
    if tests:
        if summary is None:
            lines.append(f"- tests: {len(tests)} inline case(s), not run yet")
        else:
            p, f, t = summary
            lines.append(f"- tests: {p}/{t} passed" + (f", **{f} failed**" if f else ""))
    elif rule.kind in (RuleKind.EXTRACTOR, RuleKind.ACCUMULATOR):
        lines.append("- tests: none (RK402)")
    if getattr(rule, "match_re", None):
        lines.append(f"- pattern: `{rule.match_re}`")
    if rule.docs:
        lines += ["", rule.docs]
    return "\n".join(lines)


def regex_at(corpus: Corpus, path: str, line: int, col: int):
    a = corpus.analyze()
    for r in a.ruleset.rules:
        ms = getattr(r, "match_span", None)
        if ms is not None and ms.file == path and _inside(ms, line, col):
            return r, ms
    return None


def _inside(s: Span, line: int, col: int) -> bool:
    return (s.line, s.col) <= (line, col) <= (s.end_line, s.end_col)


@lru_cache(maxsize=4096)
def regex_analysis(pattern: str):
    """The acceleration structure's analysis of one pattern (None if it cannot be built)."""
    try:
        from rulekit.extract.accel import Accelerator
        return Accelerator([pattern], backend="re2").analysis[0]
    except Exception:  # noqa: BLE001 - an invalid pattern has its own diagnostic
        return None


def regex_markdown(pattern: str, rule_name: str) -> str:
    an = regex_analysis(pattern)
    lines = [f"**pattern of `{rule_name}`**", "", f"`{pattern}`", ""]
    if an is None:
        lines.append("The acceleration structure cannot analyse this pattern (see its diagnostics).")
        return "\n".join(lines)
    if an.factors:
        shown = []
        for f in an.factors[:6]:
            shown.append(" | ".join(sorted(repr(k.decode("utf-8", "replace")) for k in f)))
        lines.append("- required literals: " + "; ".join(f"({s})" for s in shown))
    else:
        lines.append("- required literals: none")
    if an.prefilterable:
        lines.append(f"- prefilter: key `{an.key_text}` (in {an.key_sample_rate:.3%} of benign sample lines); "
                     "the rule is only tried on lines holding it")
        if an.weak_key:
            lines.append("- the key is weak: common in benign logs (RK304)")
    else:
        lines.append(f"- prefilter: none — tried on every line that passes the gate ({an.reason})")
    if an.gate_form:
        lines.append(f"- gate form: `{an.gate_form[:200]}`")
    return "\n".join(lines)


def _where(span: Span) -> str:
    return f"{span.file}:{span.line}:{span.col}"


__all__ = ["hover", "symptom_markdown", "rule_markdown", "regex_markdown", "emitters", "RULE", "SYMPTOM"]
