"""Completion: symptom names, rule names, strata/priorities, emit types, outcomes,
TOML keys of the rule schema and DSL keywords, chosen from the text before the
cursor.  Pure: no LSP types, no I/O.
"""
from __future__ import annotations

import re

from rulekit.rules.model import EMIT_TYPES, METRIC_AGGREGATES, OUTCOMES, FilterPriority, RefinerPriority
from rulekit.rules.toml_frontend import (CASE_KEYS, CASE_METRIC_KEYS, CATALOG_KEYS, EMIT_KEYS, EXPECT_KEYS,
                                         EXTRACTOR_KEYS, FAMILY_KEYS, METRIC_RULE_KEYS, METRIC_TEST_KEYS, OBS_KEYS,
                                         OUTCOME_RULE_KEYS, SYMPTOM_KEYS, TEMPLATE_KEYS, TEST_KEYS, TOP_KEYS)
from rulekit_lsp.features import CompletionEntry
from rulekit_lsp.workspace import Corpus, file_kind

TOML_SECTIONS = {
    "": TOP_KEYS, "symptom": SYMPTOM_KEYS, "outcome_rule": OUTCOME_RULE_KEYS, "extractor": EXTRACTOR_KEYS,
    "extractor.test": TEST_KEYS, "family": FAMILY_KEYS, "family.template": TEMPLATE_KEYS,
    "family.member": {"name", "test", "author", "docs"}, "family.member.test": TEST_KEYS,
    "catalog": CATALOG_KEYS, "catalog.test": TEST_KEYS, "metric_rule": METRIC_RULE_KEYS,
    "metric_rule.test": METRIC_TEST_KEYS, "case": CASE_KEYS, "case.observation": OBS_KEYS, "case.metric": CASE_METRIC_KEYS,
    "case.expect": EXPECT_KEYS, "case.job": {"id", "state", "nodes", "failed_node", "exit_code", "tasks_per_node",
                                             "ranks"},
}
TABLE_HEADERS = ["symptom", "outcome_rule", "extractor", "extractor.test", "family", "family.member",
                 "family.member.test", "catalog", "catalog.entries", "catalog.test", "metric_rule", "metric_rule.test", "case", "case.observation",
                 "case.metric"]
DSL_DECLS = ["symptom", "prefix", "extractor", "family", "catalog", "filter", "refiner", "collector", "metric_rule", "case",
             "author"]
DSL_CLAUSES = ["author", "docs", "outcome", "sub_domain", "rank", "aliases", "blame", "action", "source", "format", "requires",
               "uses python", "match", "key", "emit", "test", "member", "entry", "demote", "discard", "promote",
               "when", "unless", "prefer", "gather", "for each node", "job", "observe", "expect", "metric", "labels",
               "for", "window", "series"]
SYMPTOM_CONTEXT = re.compile(r"(symptom|symptoms|root_cause|absent_symptoms|aliases)\s*=\s*\[?[^=]*$")
RULE_CONTEXT = re.compile(r"(requires)\s*=\s*\[?[^=]*$")


def _in_string(prefix: str) -> bool:
    """Is the cursor inside an open string literal on this line?"""
    q = None
    i = 0
    while i < len(prefix):
        ch = prefix[i]
        if q:
            if ch == "\\" and q == '"':
                i += 2
                continue
            if ch == q:
                q = None
        elif ch in "\"'":
            q = ch
        elif ch == "#":
            return False
        i += 1
    return q is not None


def _section_at(lines: list[str], line: int) -> str:
    for i in range(min(line, len(lines)) - 1, -1, -1):
        m = re.match(r"^\s*\[\[?\s*([A-Za-z0-9_.\-]+)\s*\]\]?", lines[i])
        if m:
            return m.group(1)
    return ""


def symptom_items(corpus: Corpus) -> list[CompletionEntry]:
    reg = corpus.analyze().registry
    out = []
    for s in corpus.known_symptoms():
        out.append(CompletionEntry(s.name, "symptom", f"{s.outcome}/{s.sub_domain} rank {s.rank}", s.docs))
    for alias, canon in sorted(reg.aliases().items()):
        out.append(CompletionEntry(alias, "symptom", f"alias of {canon}"))
    return out


def rule_items(corpus: Corpus) -> list[CompletionEntry]:
    return [CompletionEntry(r.name, "rule", r.kind.value, r.docs) for r in corpus.known_rules()]


def metric_items(corpus: Corpus) -> list[CompletionEntry]:
    """The metric names the corpus's metric rules watch (a case's series and a new
    rule name the same metrics), with the rules that watch each."""
    by_name: dict[str, list[str]] = {}
    for r in corpus.known_rules():
        m = getattr(r, "metric", None)
        if isinstance(m, str) and m:
            by_name.setdefault(m, []).append(r.name)
    return [CompletionEntry(m, "metric", "metric watched by " + ", ".join(sorted(rs)[:3])
                            + (" ..." if len(rs) > 3 else "")) for m, rs in sorted(by_name.items())]


def aggregate_items() -> list[CompletionEntry]:
    return [CompletionEntry(a, "value", "metric aggregate (`AGGREGATE OP NUMBER`)") for a in METRIC_AGGREGATES]


def strata_items(kind: str | None = None) -> list[CompletionEntry]:
    out = []
    if kind in (None, "filter"):
        out += [CompletionEntry(s.name, "stratum", f"filter stratum ({int(s)})") for s in FilterPriority]
    if kind in (None, "refiner"):
        out += [CompletionEntry(s.name, "stratum", f"refiner stratum ({int(s)})") for s in RefinerPriority]
    return out


def emit_items() -> list[CompletionEntry]:
    return [CompletionEntry(k, "emit_type", v.value) for k, v in EMIT_TYPES.items()]


WORD_CHARS = re.compile(r"[A-Za-z0-9_.\-\[\]]*")


def word_range(text: str, line: int, col: int) -> tuple[int, int]:
    """(start, end) 1-based columns of the name under the cursor, which a completion
    replaces: `XID-7|9-FOO` -> the whole `XID-79-FOO`.  Symptom names contain `-`,
    `.` and `[...]`, so a client's own word rule (which stops at `-`) must not decide."""
    lines = text.split("\n")
    cur = lines[line - 1] if 0 < line <= len(lines) else ""
    before, after = cur[: col - 1], cur[col - 1:]
    m = re.search(r"[A-Za-z0-9_.\-\[\]]*$", before)
    start = col - (len(m.group(0).lstrip("[")) if m else 0)  # a name never starts with `[` (`[[ext|`)
    end = col + len(WORD_CHARS.match(after).group(0))  # type: ignore[union-attr]
    return start, end


def complete(corpus: Corpus, path: str, text: str, line: int, col: int) -> list[CompletionEntry]:
    lines = text.split("\n")
    cur = lines[line - 1] if 0 < line <= len(lines) else ""
    prefix = cur[: col - 1]
    kind = file_kind(path)
    if kind in ("toml", "tests"):
        return _complete_toml(corpus, lines, line, prefix)
    if kind == "rule":
        return _complete_dsl(corpus, prefix)
    if kind == "py":
        return _complete_python(corpus, prefix)
    return []


def _complete_toml(corpus: Corpus, lines: list[str], line: int, prefix: str) -> list[CompletionEntry]:
    if re.match(r"^\s*\[\[?[A-Za-z0-9_.]*$", prefix):
        return [CompletionEntry(h, "key", "table") for h in TABLE_HEADERS]
    if _in_string(prefix):
        if re.search(r"\btype\s*=\s*[\"']$|\bexpect\s*=\s*[\"']$", prefix):
            return emit_items() + ([CompletionEntry("nothing", "value", "the line must not match")]
                                   if "expect" in prefix else [])
        if re.search(r"\boutcome\s*=\s*[\"']$", prefix):
            return [CompletionEntry(o, "value", "outcome") for o in OUTCOMES]
        section = _section_at(lines, line)
        if (re.search(r"^\s*metric\s*=\s*[\"'][^\"']*$", prefix) and section == "metric_rule") or (
                re.search(r"^\s*name\s*=\s*[\"'][^\"']*$", prefix) and section == "case.metric"):
            return metric_items(corpus)
        if re.search(r"^\s*when\s*=\s*[\"']\w*$", prefix) and section == "metric_rule":
            return aggregate_items()
        if RULE_CONTEXT.search(prefix):
            return rule_items(corpus)
        if SYMPTOM_CONTEXT.search(prefix):
            return symptom_items(corpus)
        return symptom_items(corpus) + rule_items(corpus)
    if re.match(r"^\s*[A-Za-z0-9_]*$", prefix):
        section = _section_at(lines, line)
        keys = TOML_SECTIONS.get(section, TOML_SECTIONS.get(section.rsplit(".", 1)[0], set()))
        return [CompletionEntry(k, "key", f"key of [{section or 'file'}]") for k in sorted(keys)]
    m = re.search(r"\{([^}]*)$", prefix)
    if m and re.search(r"emit\s*=\s*\{[^}]*$", prefix) and re.search(r"(^|[{,])\s*[A-Za-z_]*$", m.group(1)):
        return [CompletionEntry(k, "key", "emit key") for k in sorted(EMIT_KEYS)]
    return []


def _complete_dsl(corpus: Corpus, prefix: str) -> list[CompletionEntry]:
    stripped = prefix.strip()
    if _in_string(prefix):
        if re.search(r"^\s*(metric|series)\s+\"[^\"]*$", prefix):
            return metric_items(corpus)
        return symptom_items(corpus)
    m = re.match(r"^\s*(filter|refiner)\s+\S+\s+\w*$", prefix)
    if m:
        return strata_items(m.group(1))
    if re.search(r"\b(emit|expect|=>)\s+\w*$", prefix) or re.search(r"=>\s*\w*$", prefix):
        return emit_items() + [CompletionEntry("nothing", "value", "the line must not match")]
    if re.search(r"\b(requires|uses\s+python)\s+([\w.\-\[\]]+\s*,\s*)*[\w.\-]*$", prefix):
        return rule_items(corpus)
    if re.match(r"^\s*outcome\s+\w*$", prefix):
        return [CompletionEntry(o, "value", "outcome") for o in OUTCOMES]
    if re.match(r"^\w*$", stripped) and not prefix.startswith((" ", "\t")):
        return [CompletionEntry(k, "keyword", "declaration") for k in DSL_DECLS]
    if re.match(r"^\w*$", stripped):
        return [CompletionEntry(k, "keyword", "clause") for k in DSL_CLAUSES]
    return []


def _complete_python(corpus: Corpus, prefix: str) -> list[CompletionEntry]:
    if re.search(r"FilterPriority\.\w*$", prefix):
        return strata_items("filter")
    if re.search(r"RefinerPriority\.\w*$", prefix):
        return strata_items("refiner")
    if _in_string(prefix):
        if re.search(r"\btype\s*=\s*[\"']$", prefix):
            return emit_items()
        if re.search(r"\boutcome\s*=\s*[\"']$", prefix):
            return [CompletionEntry(o, "value", "outcome") for o in OUTCOMES]
        if re.search(r"requires\s*=\s*[\(\[][^\)\]]*$", prefix):
            return rule_items(corpus)
        return symptom_items(corpus) + rule_items(corpus)
    return []
