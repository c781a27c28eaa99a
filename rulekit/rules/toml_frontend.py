"""TOML front-end: a rule file's text -> RuleSet (rule IR with spans) + Diagnostics.

Reads symptoms, outcome rules, extractors, families and catalogs (expanded here)
and `*.test.toml` job tests.  Reports schema problems (unknown keys, missing keys,
wrong types, unknown emit types, bad templates, bad test cases) with the span of
the offending key; never raises on user input.  Cross-file checks (names,
symptoms, regexes) are the loader's.
"""
from __future__ import annotations

import re
import tomllib
from typing import Any, Iterator

from rulekit.rules.records import dataclass
from rulekit.diagnostics import Diagnostic, Span, split_lines
from rulekit.rules.catalog import ENTRY_EMIT_OVERRIDES, add_symptom, entry_pattern, entry_symptom, lookup_fields
from rulekit.rules.expand import substitute_params
from rulekit.rules.suggest import did_you_mean
from rulekit.rules.model import (
    EMIT_TYPES,
    Emit,
    ExtractorRule,
    JobTestCase,
    LineTest,
    MetricCondition,
    MetricRule,
    MetricSpec,
    MetricTest,
    ObservationSpec,
    OutcomeRule,
    RuleSet,
    Symptom,
)

TOP_KEYS = {"author", "symptom", "outcome_rule", "extractor", "family", "catalog", "metric_rule"}
METRIC_RULE_KEYS = {"name", "author", "metric", "labels", "when", "for", "window", "emit", "requires", "docs", "test"}
METRIC_TEST_KEYS = {"samples", "expect", "symptom", "labels", "node"}
CASE_METRIC_KEYS = {"node", "name", "labels", "samples"}
SYMPTOM_KEYS = {"name", "outcome", "sub_domain", "rank", "docs", "aliases", "blame", "action"}
OUTCOME_RULE_KEYS = {"prefix", "outcome", "sub_domain", "rank", "blame", "action"}
EXTRACTOR_KEYS = {"name", "author", "match_re", "source", "format", "requires", "docs", "emit", "test"}
EMIT_KEYS = {"type", "symptom", "node", "fields"}
TEST_KEYS = {"line", "expect", "symptom", "node", "captures", "source", "format"}
FAMILY_KEYS = {"name", "author", "source", "format", "requires", "docs", "template", "member"}
TEMPLATE_KEYS = {"match_re", "emit", "source", "format", "requires", "docs"}
MEMBER_RESERVED = {"name", "test", "author", "docs"}
CATALOG_KEYS = {"name", "author", "match_re", "key", "source", "format", "requires", "docs", "emit", "entries", "test"}
ENTRY_EMIT_OVERRIDES = {"type", "symptom", "node"}
CASE_KEYS = {"name", "job", "observation", "metric", "expect", "fleet"}
OBS_KEYS = {"source", "node", "lines", "format"}
EXPECT_KEYS = {"outcome", "sub_domain", "root_cause", "root_node", "bad_nodes", "affected_nodes", "interesting_nodes",
               "interesting_symptoms", "symptoms", "absent_symptoms", "ambiguous", "confidence"}
EXPECT_VALUES = set(EMIT_TYPES) | {"nothing"}

_BARE_KEY = re.compile(r"[A-Za-z0-9_\-]+")
_KEY_LINE = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*=")
_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\" ]+?)\s*\]\]?\s*(?:#.*)?$")
_TOML_POS = re.compile(r"\(at line (\d+), column (\d+)\)")
_TOML_EOF = re.compile(r"\(at end of document\)")


@dataclass
class Region:
    """Lines [start, end) of one table in the file (1-based)."""

    start: int
    end: int
    header_line: int


class Locator:
    """Finds the lines of tables and keys in TOML text (tomllib gives no positions)."""

    def __init__(self, text: str, path: str, blank: tuple[int, int] = (0, 0)):
        """blank: (after line, count): the text is read as if `count` empty lines stood
        after its line `after` (a table parsed apart from its file, at its place in it,
        without a text of thousands of empty lines to split and scan)."""
        self.path = path
        lines = split_lines(text)
        if lines and lines[-1] == "":
            lines.pop()
        at, count = blank
        self.headers: list[tuple[int, str, bool]] = []  # (line, dotted name, is_array)
        in_multiline: str | None = None
        for i, line in enumerate(lines, start=1):
            if i > at:
                i += count
            if in_multiline:
                if line.count(in_multiline) % 2 == 1:
                    in_multiline = None
                continue
            for q in ('"""', "'''"):
                if line.count(q) % 2 == 1:
                    in_multiline = q
            m = _HEADER.match(line)
            if m and not in_multiline:
                name = ".".join(p.strip().strip('"') for p in m.group(2).split("."))
                self.headers.append((i, name, m.group(1) == "[["))
        if count:
            lines[at:at] = [""] * count
        self.lines = lines
        self.n = len(self.lines)

    def _end_after(self, line: int, name: str) -> int:
        """End of the region that starts at header `line`: the next header that is not a sub-table of `name`."""
        for hl, hn, _ in self.headers:
            if hl > line and not hn.startswith(name + "."):
                return hl
        return self.n + 1

    def top(self) -> Region:
        first = self.headers[0][0] if self.headers else self.n + 1
        return Region(1, first, 1)

    def tables(self, name: str, within: Region | None = None) -> list[Region]:
        out = []
        for hl, hn, _ in self.headers:
            if hn == name and (within is None or within.start <= hl < within.end):
                out.append(Region(hl + 1, self._end_after(hl, name), hl))
        return out

    def key(self, region: Region | None, key: str) -> Span:
        if region is None:
            return Span(self.path, 1, 1)
        if _BARE_KEY.fullmatch(key):  # the common case: one scan of the region, then lookups
            ln = self._keys_of(region).get(key)
            if ln is None:
                return self.header(region)
            text = self.lines[ln - 1]
            return Span(self.path, ln, len(text) - len(text.lstrip()) + 1, ln, len(text.rstrip()) + 1)
        rx = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
        for ln in range(region.start, min(region.end, self.n + 1)):
            text = self.lines[ln - 1]
            m = rx.match(text)
            if m:
                return Span(self.path, ln, len(text) - len(text.lstrip()) + 1, ln, len(text.rstrip()) + 1)
        return self.header(region)

    def _keys_of(self, region: Region) -> dict[str, int]:
        """Bare key -> the first line of the region that assigns it (memoized per region)."""
        cache = self.__dict__.setdefault("_key_lines", {})
        got = cache.get((region.start, region.end))
        if got is None:
            got = {}
            for ln in range(region.start, min(region.end, self.n + 1)):
                m = _KEY_LINE.match(self.lines[ln - 1])
                if m and m.group(1) not in got:
                    got[m.group(1)] = ln
            cache[(region.start, region.end)] = got
        return got

    def value(self, region: Region | None, key: str) -> Span:
        """Span of a key's string value content (inside the quotes) when on one line."""
        span = self.key(region, key)
        text = self.lines[span.line - 1] if 0 < span.line <= self.n else ""
        m = re.match(r"^\s*" + re.escape(key) + r"\s*=\s*", text)
        if not m:
            return span
        rest = text[m.end():]
        for q in ("'''", '"""', "'", '"'):
            if rest.startswith(q):
                close = rest.find(q, len(q))
                if close >= 0:
                    start = m.end() + len(q)
                    return Span(self.path, span.line, start + 1, span.line, m.end() + close + 1)
        return Span(self.path, span.line, m.end() + 1, span.line, len(text.rstrip()) + 1)

    def header(self, region: Region) -> Span:
        ln = region.header_line
        text = self.lines[ln - 1] if 0 < ln <= self.n else ""
        return Span(self.path, ln, len(text) - len(text.lstrip()) + 1, ln, len(text.rstrip()) + 1)


def _string_end(text: str, i: int) -> int:
    """Index just past the TOML string that starts at text[i] (a quote), or len(text)."""
    q = text[i]
    j = i + 1
    while j < len(text):
        if text[j] == "\\" and q == '"':
            j += 2
            continue
        if text[j] == q:
            return j + 1
        j += 1
    return len(text)


def inline_parts(line_text: str, path: str, line: int, start: int = 0, prefix: str = "",
                 depth: int = 0) -> list[tuple[str, Span]]:
    """Where each key's value of the inline table that opens at or after `line_text[start]`
    sits: (dotted key, the span of a string value's text inside its quotes, or of a bare
    value), and ("KEY=", the span of the key itself).  Nested inline tables give dotted
    keys (`fields.path`).  Only what is on this one line (TOML inline tables are)."""
    out: list[tuple[str, Span]] = []
    i = line_text.find("{", start)
    if i < 0 or depth > 3:
        return out
    i += 1
    n = len(line_text)
    while i < n:
        while i < n and line_text[i] in " \t,":
            i += 1
        if i >= n or line_text[i] == "}":
            break
        k0 = i
        if line_text[i] in "\"'":
            i = _string_end(line_text, i)
            key = line_text[k0 + 1:i - 1]
        else:
            while i < n and (line_text[i].isalnum() or line_text[i] in "_-"):
                i += 1
            key = line_text[k0:i]
        if not key:
            break
        out.append((f"{prefix}{key}=", Span(path, line, k0 + 1, line, i + 1)))
        while i < n and line_text[i] in " \t":
            i += 1
        if i >= n or line_text[i] != "=":
            break
        i += 1
        while i < n and line_text[i] in " \t":
            i += 1
        if i >= n:
            break
        if line_text[i] in "\"'":
            end = _string_end(line_text, i)
            q = 3 if line_text.startswith(line_text[i] * 3, i) else 1
            out.append((prefix + key, Span(path, line, i + q + 1, line, max(i + q + 1, end - q + 1))))
            i = end
        elif line_text[i] == "{":
            inner = inline_parts(line_text, path, line, i, f"{prefix}{key}.", depth + 1)
            out += inner
            level, j = 0, i
            while j < n:  # skip the nested table (its strings may hold braces)
                c = line_text[j]
                if c in "\"'":
                    j = _string_end(line_text, j)
                    continue
                level += (c == "{") - (c == "}")
                j += 1
                if level == 0:
                    break
            i = j
        else:
            v0 = i
            while i < n and line_text[i] not in ",}":
                i += 1
            out.append((prefix + key, Span(path, line, v0 + 1, line, len(line_text[:i].rstrip()) + 1)))
    return out


class _Ctx:
    def __init__(self, text: str, path: str, blank: tuple[int, int] = (0, 0)):
        self.path = path
        self.loc = Locator(text, path, blank)
        self.diags: list[Diagnostic] = []
        self.default_author = "unknown"

    def err(self, code: str, msg: str, span: Span, **data: Any) -> None:
        self.diags.append(Diagnostic(code, msg, span, data=data))

    def check_keys(self, table: dict, allowed: set[str], region: Region | None, what: str) -> None:
        for k in table:
            if k not in allowed:
                self.err("RK101", f"unknown key `{k}` in {what}{did_you_mean(k, allowed)}; known keys: "
                         f"{', '.join(sorted(allowed))}", self.loc.key(region, k), key=k)

    def inline_parts(self, span: Span, key: str, keys: bool = False) -> tuple[tuple[str, Span], ...]:
        """The value spans of the inline table `key = { ... }` on `span`'s line (`inline_parts`);
        with `keys`, the spans of its keys too (`NAME=`)."""
        text = self.loc.lines[span.line - 1] if 0 < span.line <= self.loc.n else ""
        m = re.match(r"\s*" + re.escape(key) + r"\s*=\s*\{", text)
        if not m:
            return ()
        return tuple((k, sp) for k, sp in inline_parts(text, self.path, span.line, m.end() - 1)
                     if keys or not k.endswith("="))

    def need(self, table: dict, key: str, typ: type | tuple, region: Region | None, what: str) -> Any:
        if key not in table:
            self.err("RK102", f"{what} is missing the required key `{key}`",
                     self.loc.header(region) if region else Span(self.path, 1, 1), key=key)
            return None
        return self.typed(table, key, typ, region, what)

    def typed(self, table: dict, key: str, typ: type | tuple, region: Region | None, what: str, default: Any = None) -> Any:
        if key not in table:
            return default
        v = table[key]
        if isinstance(v, bool) and typ is int:
            v = None
        if v is None or not isinstance(v, typ):
            tname = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
            self.err("RK103", f"`{key}` in {what} must be a {_words(tname)}, not {_words(type(table[key]).__name__)}",
                     self.loc.key(region, key), key=key)
            return default
        return v

    def str_list(self, table: dict, key: str, region: Region | None, what: str) -> tuple[str, ...]:
        v = table.get(key)
        if v is None:
            return ()
        if isinstance(v, str):
            return (v,)
        if isinstance(v, list) and all(isinstance(x, str) for x in v):
            return tuple(v)
        self.err("RK103", f"`{key}` in {what} must be a string or a list of strings", self.loc.key(region, key), key=key)
        return ()


def _key_span(ctx: "_Ctx", span: Span, table_key: str, key: str) -> Span:
    """The span of `key` inside the inline table `table_key = {...}` on span's line, else span."""
    text = ctx.loc.lines[span.line - 1] if 0 < span.line <= ctx.loc.n else ""
    m = re.match(r"\s*" + re.escape(table_key) + r"\s*=\s*\{", text)
    if m:
        for k, sp in inline_parts(text, ctx.path, span.line, m.end() - 1):
            if k == key + "=":
                return sp
    return span


def _words(t: str) -> str:
    return {"str": "string", "int": "integer", "dict": "table", "list": "array", "float": "float",
            "bool": "boolean", "str or list": "string or array"}.get(t, t)


def toml_error_span(exc: Exception, text: str, path: str) -> Span:
    msg = str(exc)
    m = _TOML_POS.search(msg)
    if m:
        line, col = int(m.group(1)), int(m.group(2))
        return Span(path, line, col, line, col + 1)
    lines = split_lines(text)
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    if _TOML_EOF.search(msg):
        return Span(path, len(lines), len(lines[-1]) + 1)
    return Span(path, 1, 1)


def parse_rules(text: str, path: str, blank: tuple[int, int] = (0, 0)) -> tuple[RuleSet, list[Diagnostic]]:
    """Parse one TOML rule file.  blank: (after line, count), as `Locator` takes it: the
    parse of the text with `count` empty lines inserted after its line `after`."""
    out = RuleSet(files=[path])
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        if blank[1]:  # positions of the text as it stands in its file
            lines = text.split("\n")
            return parse_rules("\n".join(lines[:blank[0]] + [""] * blank[1] + lines[blank[0]:]), path)
        msg = _TOML_POS.sub("", str(e)).strip()
        return out, [Diagnostic("RK002", f"TOML syntax error: {msg}", toml_error_span(e, text, path))]
    ctx = _Ctx(text, path, blank)
    top = ctx.loc.top()
    ctx.check_keys(data, TOP_KEYS, top, "a rule file")
    author = ctx.typed(data, "author", str, top, "the file", default=None)
    if author:
        ctx.default_author = author

    for i, (tbl, reg) in enumerate(_each(ctx, data, "symptom")):
        sym = _symptom(ctx, tbl, reg)
        if sym:
            out.symptoms.append(sym)
    for tbl, reg in _each(ctx, data, "outcome_rule"):
        ctx.check_keys(tbl, OUTCOME_RULE_KEYS, reg, "an outcome rule")
        prefix = ctx.need(tbl, "prefix", str, reg, "an outcome rule")
        if prefix is not None:
            out.outcome_rules.append(OutcomeRule(
                prefix=prefix, outcome=ctx.typed(tbl, "outcome", str, reg, "an outcome rule"),
                sub_domain=ctx.typed(tbl, "sub_domain", str, reg, "an outcome rule"),
                rank=ctx.typed(tbl, "rank", int, reg, "an outcome rule"), span=ctx.loc.header(reg),
                blame=ctx.typed(tbl, "blame", str, reg, "an outcome rule"),
                action=ctx.typed(tbl, "action", str, reg, "an outcome rule")))
    for tbl, reg in _each(ctx, data, "extractor"):
        r = _extractor(ctx, tbl, reg)
        if r:
            out.rules.append(r)
    for tbl, reg in _each(ctx, data, "family"):
        out.rules.extend(_family(ctx, tbl, reg))
    for tbl, reg in _each(ctx, data, "catalog"):
        rules, symptoms = _catalog(ctx, tbl, reg)
        out.rules.extend(rules)
        out.symptoms.extend(symptoms)
    for tbl, reg in _each(ctx, data, "metric_rule"):
        mr = _metric_rule(ctx, tbl, reg)
        if mr:
            out.rules.append(mr)
    return out, ctx.diags


def _samples(ctx: _Ctx, raw: Any, span: Span, what: str) -> tuple[tuple[float, float], ...] | None:
    ok = isinstance(raw, list) and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in p)
        for p in raw)
    if not ok:
        ctx.err("RK108", f"`samples` of {what} must be a list of [unix_seconds, value] pairs", span)
        return None
    return tuple(sorted(((float(t), float(v)) for t, v in raw), key=lambda p: p[0]))


def _labels(ctx: _Ctx, raw: Any, span: Span, what: str) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        ctx.err("RK103", f"`labels` in {what} must be a table of strings, e.g. {{ device = \"mlx5_0\" }}", span)
        return ()
    return tuple(sorted((str(k), v) for k, v in raw.items()))


def _metric_rule(ctx: _Ctx, tbl: dict, reg: Region | None) -> MetricRule | None:
    from rulekit.rules.metricspec import parse_condition, parse_duration

    name = tbl.get("name") if isinstance(tbl.get("name"), str) else None
    what = f"metric rule `{name}`" if name else "a metric rule"
    ctx.check_keys(tbl, METRIC_RULE_KEYS, reg, what)
    name = ctx.need(tbl, "name", str, reg, what)
    metric = ctx.need(tbl, "metric", str, reg, what)
    when = ctx.need(tbl, "when", str, reg, what)
    emit = _emit(ctx, tbl.get("emit"), reg, what)
    if emit is not None and emit.type == "data":
        ctx.err("RK104", f"emit of {what} must be a node event (bad_node, interesting_node), not `data`", emit.span)
        emit = None
    cond = None
    if when is not None:
        got = parse_condition(when)
        if isinstance(got, str):
            ctx.err("RK111", got, ctx.loc.value(reg, "when"))
        else:
            durations: dict[str, float | None] = {"for": 0.0, "window": None}
            bad = False
            for key in durations:
                if key in tbl:
                    d = parse_duration(tbl[key])
                    if isinstance(d, str):
                        ctx.err("RK111", f"`{key}` in {what}: {d}", ctx.loc.key(reg, key))
                        bad = True
                    else:
                        durations[key] = d
            if durations["window"] is not None and got[0] == "value":
                ctx.err("RK111", f"`window` in {what} applies to rate and increase, not to `value`", ctx.loc.key(reg, "window"))
                bad = True
            if not bad:
                cond = MetricCondition(got[0], got[1], got[2], float(durations["for"] or 0.0), durations["window"],
                                       span=ctx.loc.value(reg, "when"))
    labels = _labels(ctx, tbl.get("labels"), ctx.loc.key(reg, "labels"), what)
    tests = []
    regions = ctx.loc.tables("metric_rule.test", reg) if reg else []
    for i, t, treg, tspan in _test_tables(ctx, tbl.get("test") or None, regions, reg, what, "metric_rule.test"):
        ctx.check_keys(t, METRIC_TEST_KEYS, treg, f"a test case of {what}")
        samples = _samples(ctx, t.get("samples"), ctx.loc.key(treg, "samples") if treg else tspan, f"test case {i + 1} of {what}")
        expect = t.get("expect", emit.type if emit else "interesting_node")
        if expect not in EXPECT_VALUES:
            ctx.err("RK108", f"`expect` must be one of {', '.join(sorted(EXPECT_VALUES))}, not `{expect}`",
                    ctx.loc.key(treg, "expect") if treg else tspan)
            continue
        node = t.get("node", "node-under-test")
        if samples is None or not isinstance(node, str):
            continue
        tests.append(MetricTest(samples=samples, expect=expect, symptom=t.get("symptom") if isinstance(t.get("symptom"), str) else None,
                                labels=_labels(ctx, t.get("labels"), tspan, f"test case {i + 1} of {what}") or labels,
                                node=node, span=tspan))
    if name is None or metric is None or cond is None or emit is None:
        return None
    return MetricRule(name=name, author=ctx.typed(tbl, "author", str, reg, what, default=ctx.default_author),
                      span=ctx.loc.value(reg, "name"), metric=metric, condition=cond, emit=emit, labels=labels,
                      requires=ctx.str_list(tbl, "requires", reg, what), tests=tuple(tests),
                      docs=ctx.typed(tbl, "docs", str, reg, what, default=""))


def _each(ctx: _Ctx, data: dict, key: str) -> list[tuple[dict, Region | None]]:
    v = data.get(key)
    if v is None:
        return []
    regions = ctx.loc.tables(key)
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        ctx.err("RK103", f"`{key}` must be an array of tables: write `[[{key}]]`", ctx.loc.key(ctx.loc.top(), key))
        return []
    return [(tbl, regions[i] if i < len(regions) else None) for i, tbl in enumerate(v)]


def _symptom(ctx: _Ctx, tbl: dict, reg: Region | None) -> Symptom | None:
    what = "a symptom"
    ctx.check_keys(tbl, SYMPTOM_KEYS, reg, what)
    name = ctx.need(tbl, "name", str, reg, what)
    outcome = ctx.need(tbl, "outcome", str, reg, what)
    sub = ctx.need(tbl, "sub_domain", str, reg, what)
    rank = ctx.need(tbl, "rank", int, reg, what)
    docs = ctx.typed(tbl, "docs", str, reg, what, default="")
    aliases = ctx.str_list(tbl, "aliases", reg, what)
    blame = ctx.typed(tbl, "blame", str, reg, what)
    action = ctx.typed(tbl, "action", str, reg, what)
    if None in (name, outcome, sub, rank):
        return None
    span = ctx.loc.value(reg, "name")
    return Symptom(name=name, outcome=outcome, sub_domain=sub, rank=rank, docs=docs, aliases=aliases, span=span,
                   blame=blame, action=action)


def _emit(ctx: _Ctx, raw: Any, reg: Region | None, what: str, key: str = "emit") -> Emit | None:
    if raw is None:
        ctx.err("RK102", f"{what} is missing the required key `emit`", ctx.loc.header(reg) if reg else Span(ctx.path, 1, 1), key="emit")
        return None
    if not isinstance(raw, dict):
        ctx.err("RK103", f"`emit` in {what} must be a table like {{ type = \"bad_node\", symptom = \"...\" }}", ctx.loc.key(reg, key))
        return None
    span = ctx.loc.key(reg, key)
    for k in raw:
        if k not in EMIT_KEYS:
            ctx.err("RK101", f"unknown key `{k}` in emit of {what}{did_you_mean(k, EMIT_KEYS)}; known keys: "
                    f"{', '.join(sorted(EMIT_KEYS))}", _key_span(ctx, span, key, k), key=k)
    etype = raw.get("type", "bad_node")
    if etype not in EMIT_TYPES:
        ctx.err("RK104", f"unknown emit type `{etype}` in {what}; use one of {', '.join(EMIT_TYPES)}", span, type=etype)
        return None
    fields = raw.get("fields", {}) or {}
    if not isinstance(fields, dict) or not all(isinstance(v, (str, int, float, bool)) for v in fields.values()):
        ctx.err("RK103", f"`emit.fields` in {what} must be a table of strings", span)
        fields = {}
    symptom = raw.get("symptom")
    node = raw.get("node")
    for k, v in (("symptom", symptom), ("node", node)):
        if v is not None and not isinstance(v, str):
            ctx.err("RK103", f"`emit.{k}` in {what} must be a string", span)
    if etype != "data" and not symptom:
        ctx.err("RK102", f"emit of {what} needs a `symptom` (every {etype} event carries one)", span, key="symptom")
    return Emit(type=etype, symptom=symptom if isinstance(symptom, str) else None,
                node=node if isinstance(node, str) else None,
                fields=tuple((str(k), str(v)) for k, v in fields.items()), span=span,
                parts=ctx.inline_parts(span, key) if key == "emit" else ())


def _test_tables(ctx: _Ctx, raw: Any, regions: list[Region], parent: Region | None, what: str,
                 header: str) -> Iterator[tuple[int, dict, Region | None, Span]]:
    """The inline test tables of a rule (`[[extractor.test]]`, `[[metric_rule.test]]`, ...):
    (index, table, its region, its span) for each; RK108 for a `test` that is not an array
    of tables (`header` names the table to write) and for an entry that is not a table."""
    if raw is None:
        return
    if isinstance(raw, dict):
        raw = [raw]
    if not isinstance(raw, list):
        ctx.err("RK108", f"`test` in {what} must be an array of tables: write `[[{header}]]`", ctx.loc.key(parent, "test"))
        return
    for i, t in enumerate(raw):
        reg = regions[i] if i < len(regions) else None
        span = ctx.loc.header(reg) if reg else ctx.loc.key(parent, "test")
        if not isinstance(t, dict):
            ctx.err("RK108", f"test case {i + 1} of {what} must be a table", span)
            continue
        yield i, t, reg, span


def _tests(ctx: _Ctx, raw: Any, regions: list[Region], parent: Region | None, what: str) -> tuple[LineTest, ...]:
    out = []
    for i, t, reg, span in _test_tables(ctx, raw, regions, parent, what, "...test"):
        for k in t:
            if k not in TEST_KEYS:
                ctx.err("RK101", f"unknown key `{k}` in a test case of {what}{did_you_mean(k, TEST_KEYS)}; known "
                        f"keys: {', '.join(sorted(TEST_KEYS))}", ctx.loc.key(reg, k) if reg else span, key=k)
        line = t.get("line")
        if not isinstance(line, str):
            ctx.err("RK108", f"test case {i + 1} of {what} needs `line = \"...\"` (the log line to try)", span)
            continue
        expect = t.get("expect")
        if expect is not None and expect not in EXPECT_VALUES:
            ctx.err("RK108", f"`expect` must be one of {', '.join(sorted(EXPECT_VALUES))}, not `{expect}`",
                    ctx.loc.key(reg, "expect") if reg else span)
            continue
        caps = t.get("captures") or {}
        if not isinstance(caps, dict):
            ctx.err("RK108", "`captures` must be a table of group = \"text\"", span)
            caps = {}
        parts: list[tuple[str, Span]] = []
        if reg is not None:
            parts += [(k, ctx.loc.value(reg, k)) for k in ("symptom", "node", "expect") if k in t]
            if "captures" in t:
                parts += [(f"captures.{n}", sp) for n, sp in ctx.inline_parts(ctx.loc.key(reg, "captures"), "captures",
                                                                              keys=True)]
        out.append(LineTest(line=line, expect=expect or "", symptom=t.get("symptom"), node=t.get("node"),
                            captures=tuple(sorted((str(k), str(v)) for k, v in caps.items())),
                            source=t.get("source"), format=t.get("format"),
                            span=ctx.loc.value(reg, "line") if reg else span, parts=tuple(parts)))
    return tuple(out)


def _with_default_expect(tests: tuple[LineTest, ...], emit: Emit | None) -> tuple[LineTest, ...]:
    default = emit.type if emit else "bad_node"
    from dataclasses import replace

    return tuple(t if t.expect else replace(t, expect=default) for t in tests)


def _extractor(ctx: _Ctx, tbl: dict, reg: Region | None) -> ExtractorRule | None:
    name = tbl.get("name") if isinstance(tbl.get("name"), str) else None
    what = f"extractor `{name}`" if name else "an extractor"
    ctx.check_keys(tbl, EXTRACTOR_KEYS, reg, what)
    name = ctx.need(tbl, "name", str, reg, what)
    pattern = ctx.need(tbl, "match_re", str, reg, what)
    emit = _emit(ctx, tbl.get("emit"), reg, what)
    tests = _tests(ctx, tbl.get("test"), ctx.loc.tables("extractor.test", reg) if reg else [], reg, what)
    if name is None or pattern is None or emit is None:
        return None
    return ExtractorRule(
        name=name, author=ctx.typed(tbl, "author", str, reg, what, default=ctx.default_author),
        span=ctx.loc.value(reg, "name"), match_re=pattern, match_span=ctx.loc.value(reg, "match_re"), emit=emit,
        sources=ctx.str_list(tbl, "source", reg, what), formats=ctx.str_list(tbl, "format", reg, what),
        requires=ctx.str_list(tbl, "requires", reg, what), tests=_with_default_expect(tests, emit),
        docs=ctx.typed(tbl, "docs", str, reg, what, default=""))


def _family(ctx: _Ctx, tbl: dict, reg: Region | None) -> list[ExtractorRule]:
    fname = tbl.get("name") if isinstance(tbl.get("name"), str) else None
    what = f"family `{fname}`" if fname else "a family"
    ctx.check_keys(tbl, FAMILY_KEYS, reg, what)
    fname = ctx.need(tbl, "name", str, reg, what)
    template = ctx.need(tbl, "template", dict, reg, what)
    members = tbl.get("member")
    if fname is None or template is None:
        return []
    for k in template:
        if k not in TEMPLATE_KEYS:
            ctx.err("RK101", f"unknown key `{k}` in the template of {what}{did_you_mean(k, TEMPLATE_KEYS)}; known keys: "
                    f"{', '.join(sorted(TEMPLATE_KEYS))}", _key_span(ctx, ctx.loc.key(reg, "template"), "template", k), key=k)
    if not isinstance(members, list) or not members:
        ctx.err("RK102", f"{what} has no members: add `[[family.member]]` tables", ctx.loc.header(reg) if reg else Span(ctx.path, 1, 1))
        return []
    tmpl_pattern = template.get("match_re")
    if not isinstance(tmpl_pattern, str):
        ctx.err("RK102", f"the template of {what} needs `match_re`", ctx.loc.key(reg, "template"))
        return []
    member_regions = ctx.loc.tables("family.member", reg) if reg else []
    out = []
    # table-level fields are read (and reported) once, not once per member
    family_author = ctx.typed(tbl, "author", str, reg, what, default=ctx.default_author)
    sources = ctx.str_list({"source": template.get("source", tbl.get("source"))}, "source", reg, what)
    formats = ctx.str_list({"format": template.get("format", tbl.get("format"))}, "format", reg, what)
    requires = ctx.str_list(tbl, "requires", reg, what)
    for i, m in enumerate(members):
        mreg = member_regions[i] if i < len(member_regions) else None
        mspan = ctx.loc.value(mreg, "name") if mreg else ctx.loc.header(reg) if reg else Span(ctx.path, 1, 1)
        if not isinstance(m, dict) or not isinstance(m.get("name"), str):
            ctx.err("RK102", f"member {i + 1} of {what} needs a `name`", mspan)
            continue
        mname = f"{fname}.{m['name']}"
        params = {k: v for k, v in m.items() if k not in MEMBER_RESERVED}
        params["name"] = m["name"]
        pattern, missing = substitute_params(tmpl_pattern, params)
        emit_raw = _subst_tree(template.get("emit"), params, missing)
        if missing:
            ctx.err("RK107", f"member `{m['name']}` of {what} does not define {', '.join('`' + x + '`' for x in sorted(set(missing)))} used by the template",
                    mspan, missing=sorted(set(missing)))
            continue
        mwhat = f"family member `{mname}`"
        emit = _emit(ctx, emit_raw, reg, mwhat, key="template")
        if emit is None:
            continue
        tests = _tests(ctx, m.get("test"), ctx.loc.tables("family.member.test", mreg) if mreg else [], mreg, mwhat)
        out.append(ExtractorRule(
            name=mname, author=m.get("author") or family_author,
            span=mspan, match_re=pattern, match_span=ctx.loc.key(reg, "template"), emit=emit,
            sources=sources, formats=formats, requires=requires, tests=_with_default_expect(tests, emit),
            origin=f"family:{fname}", docs=str(m.get("docs") or tbl.get("docs") or "")))
    return out


def _subst_tree(v: Any, params: dict, missing: list[str]) -> Any:
    if isinstance(v, str):
        s, miss = substitute_params(v, params)
        missing.extend(miss)
        return s
    if isinstance(v, dict):
        return {k: _subst_tree(x, params, missing) for k, x in v.items()}
    if isinstance(v, list):
        return [_subst_tree(x, params, missing) for x in v]
    return v


def catalog_keys(raw: Any) -> list[str] | None:
    """A catalog's `key`: one group name, or a list of them (None: neither)."""
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list) and raw and all(isinstance(k, str) for k in raw):
        return list(raw)
    return None


def _catalog(ctx: _Ctx, tbl: dict, reg: Region | None) -> tuple[list[ExtractorRule], list[Symptom]]:
    cname = tbl.get("name") if isinstance(tbl.get("name"), str) else None
    what = f"catalog `{cname}`" if cname else "a catalog"
    ctx.check_keys(tbl, CATALOG_KEYS, reg, what)
    cname = ctx.need(tbl, "name", str, reg, what)
    pattern = ctx.need(tbl, "match_re", str, reg, what)
    raw_key = ctx.need(tbl, "key", (str, list), reg, what)
    entries = ctx.need(tbl, "entries", dict, reg, what)
    emit_raw = tbl.get("emit")
    if None in (cname, pattern, raw_key, entries):
        return [], []
    keys = catalog_keys(raw_key)
    if keys is None:
        ctx.err("RK103", f"`key` in {what} must be a group name or a list of group names", ctx.loc.key(reg, "key"))
        return [], []
    missing = [k for k in keys if f"(?P<{k}>" not in pattern]
    if missing:
        ctx.err("RK107", f"the pattern of {what} has no named group {', '.join(f'`(?P<{k}>...)`' for k in missing)} "
                         f"for its key {', '.join(f'`{k}`' for k in missing)}", ctx.loc.value(reg, "match_re"),
                missing=missing)
        return [], []
    tests = _tests(ctx, tbl.get("test"), ctx.loc.tables("catalog.test", reg) if reg else [], reg, what)
    base_emit = emit_raw if isinstance(emit_raw, dict) else None
    if base_emit is None:
        _emit(ctx, emit_raw, reg, what)
        return [], []
    entries_region = (ctx.loc.tables("catalog.entries", reg) or [reg])[0] if reg else None
    # table-level fields are read (and reported) once, not once per entry
    author = ctx.typed(tbl, "author", str, reg, what, default=ctx.default_author)
    sources = ctx.str_list(tbl, "source", reg, what)
    formats = ctx.str_list(tbl, "format", reg, what)
    requires = ctx.str_list(tbl, "requires", reg, what)
    out = []
    symptoms: dict[str, Symptom] = {}
    for k, entry in entries.items():
        espan = ctx.loc.key(entries_region, k) if entries_region else Span(ctx.path, 1, 1)
        if isinstance(entry, str):
            entry = {"name": entry}
        if not isinstance(entry, dict):
            ctx.err("RK103", f"entry `{k}` of {what} must be a table like {{ name = \"...\" }}", espan)
            continue
        lookup = lookup_fields(entry)
        merged = dict(base_emit)
        for f in ENTRY_EMIT_OVERRIDES:
            if f in entry:
                merged[f] = entry[f]
        ename = f"{cname}[{k}]"
        emit = _emit(ctx, merged, reg, f"catalog entry `{ename}`")
        if emit is None:
            continue
        ewhat = f"entry `{k}` of {what}"
        expanded, problem = entry_pattern(pattern, keys, str(k), lookup, ewhat)
        if problem is None:
            sym, problem = entry_symptom(entry, emit.symptom, {keys[0]: str(k), **lookup}, espan, ewhat)
            if sym is not None:
                problem = add_symptom(symptoms, sym, ewhat)
        if problem is not None:
            ctx.err(problem[0], problem[1], espan)
        if expanded is None:
            continue
        out.append(ExtractorRule(
            name=ename, author=author,
            span=espan, match_re=expanded, match_span=ctx.loc.value(reg, "match_re"), emit=emit,
            sources=sources, formats=formats, requires=requires, tests=(), origin=f"catalog:{cname}",
            lookup=tuple(sorted(lookup.items())), docs=str(entry.get("docs") or tbl.get("docs") or ""),
            catalog_key=str(k)))
    # Catalog-level tests are kept on the first expanded rule; the test runner runs a
    # test of a catalog rule through every rule of that catalog (see rulekit.analysis.testing).
    if out and tests:
        from dataclasses import replace

        out[0] = replace(out[0], tests=_with_default_expect(tests, out[0].emit))
    return out, list(symptoms.values())


def parse_job_tests(text: str, path: str) -> tuple[list[JobTestCase], list[Diagnostic]]:
    """Parse a `*.test.toml` file of job-level test cases."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = _TOML_POS.sub("", str(e)).strip()
        return [], [Diagnostic("RK002", f"TOML syntax error: {msg}", toml_error_span(e, text, path))]
    ctx = _Ctx(text, path)
    ctx.check_keys(data, {"case"}, ctx.loc.top(), "a job test file")
    cases = []
    for i, (tbl, reg) in enumerate(_each(ctx, data, "case")):
        what = f"test case `{tbl.get('name', i + 1)}`"
        ctx.check_keys(tbl, CASE_KEYS, reg, what)
        name = ctx.need(tbl, "name", str, reg, what)
        job = ctx.typed(tbl, "job", dict, reg, what, default={})
        fleet = ctx.typed(tbl, "fleet", dict, reg, what, default=None)
        expect = ctx.need(tbl, "expect", dict, reg, what)
        if expect:
            for k in expect:
                if k not in EXPECT_KEYS:
                    ctx.err("RK101", f"unknown key `{k}` in expect of {what}{did_you_mean(k, EXPECT_KEYS)}; known keys: "
                            f"{', '.join(sorted(EXPECT_KEYS))}",
                            ctx.loc.key((ctx.loc.tables("case.expect", reg) or [reg])[0] if reg else None, k), key=k)
        obs = []
        obs_regions = ctx.loc.tables("case.observation", reg) if reg else []
        raw_obs = tbl.get("observation", [])
        if not isinstance(raw_obs, list):
            raw_obs = []
        for j, o in enumerate(raw_obs):
            oreg = obs_regions[j] if j < len(obs_regions) else reg
            if not isinstance(o, dict):
                continue
            ctx.check_keys(o, OBS_KEYS, oreg, f"an observation of {what}")
            lines = o.get("lines", [])
            if isinstance(lines, str):
                lines = lines.splitlines()
            if not isinstance(o.get("source"), str) or not isinstance(lines, list):
                ctx.err("RK108", f"observation {j + 1} of {what} needs `source` and `lines`", ctx.loc.header(oreg) if oreg else Span(path, 1, 1))
                continue
            obs.append(ObservationSpec(source=o["source"], lines=tuple(str(x) for x in lines), node=o.get("node"),
                                       format=o.get("format", "text"), span=ctx.loc.header(oreg) if oreg else None))
        metrics = []
        met_regions = ctx.loc.tables("case.metric", reg) if reg else []
        raw_met = tbl.get("metric", [])
        for j, m in enumerate(raw_met if isinstance(raw_met, list) else []):
            mreg = met_regions[j] if j < len(met_regions) else reg
            mspan = ctx.loc.header(mreg) if mreg else Span(path, 1, 1)
            if not isinstance(m, dict):
                continue
            ctx.check_keys(m, CASE_METRIC_KEYS, mreg, f"a metric of {what}")
            samples = _samples(ctx, m.get("samples"), ctx.loc.key(mreg, "samples") if mreg else mspan, f"metric {j + 1} of {what}")
            if not isinstance(m.get("node"), str) or not isinstance(m.get("name"), str):
                ctx.err("RK108", f"metric {j + 1} of {what} needs `node` and `name`", mspan)
                continue
            if samples is not None:
                metrics.append(MetricSpec(node=m["node"], name=m["name"], samples=samples,
                                          labels=_labels(ctx, m.get("labels"), mspan, what), span=mspan))
        if name is None or expect is None:
            continue
        cases.append(JobTestCase(name=name, job=job or {}, observations=tuple(obs), expect=expect,
                                 span=ctx.loc.value(reg, "name") if reg else Span(path, 1, 1), metrics=tuple(metrics),
                                 fleet=fleet))
    return cases, ctx.diags
