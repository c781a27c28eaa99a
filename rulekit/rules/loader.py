"""The rule loader: rule files -> validated RuleEngine, every problem as a Diagnostic.

Follows the spec's initialization order: register the built-in rule types, glob
each rules folder for top-level `*.py`, `*.toml` and `*.rule` files (sorted,
skipping `*.test.toml`; `common/` is only imported by rule modules), execute each
`.py` fresh with its decorators bound to this loader, parse each declarative file
with its front-end, then validate the whole corpus in one pass (names,
dependencies, symptoms, priorities, templates, regexes) and freeze it.

`load_corpus()` collects every problem and never raises on user input (what the
CLI and the language server call); `RuleLoader.build(strict=True)` raises a
RulekitError carrying all errors at once (what `setup_rules()` uses).
"""
from __future__ import annotations

import functools
import os
import re
import sys
import traceback
import types
from dataclasses import field
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from rulekit.rules.records import dataclass
from rulekit.config import EngineOptions, GlobalConfig
from rulekit.diagnostics import Diagnostic, Related, RulekitError, Severity, Span, has_errors, split_lines
from rulekit.rules.corpus import RuleEngine
from rulekit.rules.corpus_cache import CorpusCache, open_cache
from rulekit.rules.expand import template_names
from rulekit.rules.model import (
    ACTIONS,
    BLAMES,
    OUTCOMES,
    AccumulatorRule,
    CollectorRule,
    ExtractorRule,
    MetricRule,
    FilterPriority,
    FilterRule,
    RefinerPriority,
    RefinerRule,
    RuleKind,
    RuleSet,
    stratum_of,
)
from rulekit.rules.plugins import _ACTIVE, PluginSink
from rulekit.rules import sandbox
from rulekit.extract.regex import check_pattern, group_names, written_group_names
from rulekit.rules.suggest import closest, did_you_mean
from rulekit.rules.registry import SymptomRegistry

RULE_SUFFIXES = (".toml", ".rule", ".py")


def bundled_rules_path() -> Path:
    """The package's bundled rules folder: `rulekit/bundled_rules` inside an installed
    wheel, `bundled_rules/` beside the package in a source checkout (editable install)."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "bundled_rules", package.parent / "bundled_rules"):
        if candidate.is_dir():
            return candidate
    return Path(str(resources.files("rulekit.bundled_rules")))


# ---- rule types ---------------------------------------------------------------------

RULE_TYPES: dict[str, type] = {}


def rule_type(kind: RuleKind) -> Callable[[type], type]:
    """Register a rule type's validator with the loader."""

    def deco(cls: type) -> type:
        RULE_TYPES[kind.value] = cls
        return cls

    return deco


@rule_type(RuleKind.EXTRACTOR)
class _ExtractorType:
    @staticmethod
    def validate(rule: ExtractorRule, v: "_Validator") -> None:
        broken = v.check_regex(rule, rule.match_re)
        names = group_names(rule.match_re) | {k for k, _ in rule.lookup}
        # a pattern that does not compile has no groups for Python either: the groups its
        # author plainly wrote are not reported missing (the pattern's error says it all)
        written = written_group_names(rule.match_re) if broken else set()
        e = rule.emit
        parts = [("symptom", e.symptom), ("node", e.node), *((f"fields.{k}", val) for k, val in e.fields)]
        for part, t in parts:
            for ph in template_names(t):
                if ph not in names and ph not in written:
                    v.add("RK107", f"emit of `{rule.name}` uses `{{{ph}}}` but the pattern has no named group "
                          f"`(?P<{ph}>...)`{did_you_mean(ph, names | written)}",
                          token_span(e.part(part), t, "{" + ph + "}") or e.span or rule.span, placeholder=ph,
                          rule=rule.name)
        at = e.part("symptom") or e.span or rule.span
        if e.symptom and not template_names(_static(e.symptom, rule)):
            v.use_symptom(_static(e.symptom, rule), rule.name, at)
        elif e.symptom:
            v.use_symptom_template(_static(e.symptom, rule), rule.name, at)
        for t in rule.tests:
            if t.symptom:
                v.use_symptom(t.symptom, rule.name, t.part("symptom") or t.span or rule.span, emitted=False)
            for cap, _ in t.captures:
                if cap not in names and cap not in written:
                    v.add("RK108", f"test of `{rule.name}` checks capture `{cap}`, which the pattern does not define"
                          f"{did_you_mean(cap, names | written)}",
                          t.part(f"captures.{cap}=") or t.part(f"captures.{cap}") or t.span or rule.span,
                          rule=rule.name, capture=cap)


@rule_type(RuleKind.ACCUMULATOR)
class _AccumulatorType:
    @staticmethod
    def validate(rule: AccumulatorRule, v: "_Validator") -> None:
        v.check_regex(rule, rule.trigger_re)
        for s in rule.symptoms:
            v.use_symptom(s, rule.name, rule.span)


@rule_type(RuleKind.FILTER)
class _FilterType:
    @staticmethod
    def validate(rule: FilterRule, v: "_Validator") -> None:
        v.check_priority(rule, FilterPriority, "filter")
        for s in rule.symptoms:
            v.use_symptom(s, rule.name, rule.span)


@rule_type(RuleKind.REFINER)
class _RefinerType:
    @staticmethod
    def validate(rule: RefinerRule, v: "_Validator") -> None:
        v.check_priority(rule, RefinerPriority, "refiner")
        for s in rule.symptoms:
            v.use_symptom(s, rule.name, rule.span, emitted=False)


@rule_type(RuleKind.METRIC)
class _MetricType:
    @staticmethod
    def validate(rule: MetricRule, v: "_Validator") -> None:
        e = rule.emit
        if e.symptom and template_names(e.symptom):
            v.add("RK107", f"emit of metric rule `{rule.name}` uses a template; a metric rule names its symptom",
                  e.span or rule.span)
        elif e.symptom:
            v.use_symptom(e.symptom, rule.name, e.span or rule.span)
        for t in rule.tests:
            if t.symptom:
                v.use_symptom(t.symptom, rule.name, t.span or rule.span, emitted=False)


@rule_type(RuleKind.COLLECTOR)
class _CollectorType:
    @staticmethod
    def validate(rule: CollectorRule, v: "_Validator") -> None:
        return None


def token_span(span: Span | None, text: str | None, token: str) -> Span | None:
    """The span of `token` inside a value written on one line as `text` (its span is the
    text's, inside the quotes); None when the written text is not `text` verbatim."""
    if span is None or text is None or span.line != span.end_line or span.end_col - span.col != len(text):
        return None
    i = text.find(token)
    return Span(span.file, span.line, span.col + i, span.line, span.col + i + len(token)) if i >= 0 else None


def _static(template: str, rule: ExtractorRule) -> str:
    """Render the placeholders a catalog entry fixes at load time (its lookup fields and key)."""
    if "{" not in template:
        return template
    args = (template, tuple(rule.lookup), rule.catalog_key, rule.match_re)
    try:
        return _static_cached(*args)
    except TypeError:  # a lookup value that cannot be hashed
        return _static_of(*args)


def _static_of(template: str, lookup: tuple, key_val: str | None, match_re: str) -> str:
    values = dict(lookup)
    if key_val is not None:
        m = re.search(r"\(\?P<(\w+)>" + re.escape(re.escape(key_val)) + r"\)", match_re)
        if m:
            values[m.group(1)] = key_val
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)


_static_cached = functools.lru_cache(maxsize=1 << 14)(_static_of)


# ---- validation -----------------------------------------------------------------------

@dataclass
class _Validator:
    ruleset: RuleSet
    registry: SymptomRegistry
    diags: list[Diagnostic] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    used_prefixes: set[str] = field(default_factory=set)
    plugin_files: dict[str, str] = field(default_factory=dict)  # path -> source of each `.py` rule file
    plugin_texts: list[str] = field(default_factory=list)  # sources that keep a symptom "used" (RK205)
    symptoms: dict[str, object] = field(default_factory=dict)  # first registration of each name (`symptoms`)
    rules: dict[str, object] = field(default_factory=dict)  # first definition of each rule name (`rules`)

    def add(self, code: str, msg: str, span: Span | None, related: Sequence[Related] = (), **data) -> None:
        self.diags.append(Diagnostic(code, msg, span, related=tuple(related), data=data))

    def use_symptom(self, name: str, rule: str, span: Span | None, emitted: bool = True) -> None:
        self.used.add(self.registry.canonical(name))
        if not self.registry.is_known(name):
            near = closest(name, (*self.registry.names(), *self.registry.aliases()))
            hint = (" (did you mean " + " or ".join(f"`{c}`" for c in near) + "?)") if near else ""
            self.add("RK203", f"`{rule}` uses symptom `{name}`, which is not registered{hint}", span, symptom=name,
                     rule=rule, **({"suggestions": near} if near else {}))

    def use_symptom_template(self, template: str, rule: str, span: Span | None) -> None:
        prefix = template.split("{", 1)[0]
        self.used_prefixes.add(prefix)
        known = any(s.startswith(prefix) for s in self.registry.names()) or (
            self.registry.prefix_rule(prefix) is not None)
        if not known:
            self.add("RK203", f"`{rule}` emits symptoms `{template}`, but no registered symptom or outcome rule starts with `{prefix}`",
                     span, symptom=template, rule=rule)

    def check_priority(self, rule: FilterRule | RefinerRule, strata: type, what: str) -> None:
        p = rule.priority
        names = " < ".join(s.name for s in strata)
        if not isinstance(p, int) or isinstance(p, bool):
            self.add("RK105", f"{what} `{rule.name}` has priority {p!r}; use one of {names} (plus an offset 0..999)",
                     rule.span, rule=rule.name)
        elif stratum_of(p, strata) is None:
            self.add("RK105", f"{what} `{rule.name}` has priority {p}, outside the {what} strata {names}", rule.span,
                     rule=rule.name)

    def check_regex(self, rule: ExtractorRule | AccumulatorRule, pattern: str) -> bool:
        """Report the pattern's problems; True when it does not compile (an error)."""
        base = getattr(rule, "match_span", None) or rule.span
        broken = False
        for prob in check_pattern(pattern):
            span = base
            if base is not None and base.line == base.end_line and base.end_col - base.col >= len(pattern):
                span = Span(base.file, base.line, base.col + prob.start, base.line, base.col + max(prob.end, prob.start + 1))
            self.add(prob.code, f"pattern of `{rule.name}`: {prob.message}", span, rule=rule.name,
                     start=prob.start, end=prob.end)
            broken = broken or prob.code in ("RK301", "RK302")
        return broken


def _check_blame(v: "_Validator", what: str, blame: str | None, action: str | None, span, **kw) -> None:
    if blame is not None and blame not in BLAMES:
        v.add("RK110", f"{what} has blame `{blame}`; use one of {', '.join(BLAMES)}", span, **kw)
    if action is not None and action not in ACTIONS:
        v.add("RK110", f"{what} has action `{action}`; use one of {', '.join(ACTIONS)}", span, **kw)


# ---- the corpus-wide checks, in the order they run -------------------------------------------
# Each takes the validator (the corpus, its registry, the plugin sources) and adds its findings.
# CORPUS_CHECKS run first (the per-rule validators of RULE_TYPES run inside `rules`); the FINALIZE
# steps need what those recorded (the symptoms every rule uses) or the whole corpus at once.

def _check_symptoms(v: "_Validator") -> None:
    """RK106 outcome, RK110 blame/action, RK202 registered twice."""
    for s in v.ruleset.symptoms:
        if s.outcome not in OUTCOMES:
            v.add("RK106", f"symptom `{s.name}` has outcome `{s.outcome}`; use one of {', '.join(OUTCOMES)}", s.span,
                  symptom=s.name)
        _check_blame(v, f"symptom `{s.name}`", s.blame, s.action, s.span, symptom=s.name)
        prev = v.symptoms.get(s.name)
        if prev is not None:
            v.add("RK202", f"symptom `{s.name}` is registered twice{_bundled_hint(prev.span)}", s.span,  # type: ignore[attr-defined]
                  [Related(prev.span, "first registered here")] if prev.span else [], symptom=s.name)  # type: ignore[attr-defined]
        else:
            v.symptoms[s.name] = s


def _bundled_hint(first: Span | None) -> str:
    """When a name's first definition is the bundled corpus's: how to put one's own in its place."""
    if first is None or not _is_bundled(Path(first.file).parent):
        return ""
    return (": the bundled rules define it (rename yours, or load your folder alone with --no-bundled "
            "or `bundled = false` in rulekit.toml)")


def _check_aliases(v: "_Validator") -> None:
    """RK207: an alias that is another symptom's name."""
    seen = v.symptoms
    for s in v.ruleset.symptoms:
        for a in s.aliases:
            if a in seen and a != s.name:
                v.add("RK207", f"alias `{a}` of symptom `{s.name}` is also the name of a symptom", s.span,
                      [Related(seen[a].span, "registered here")] if seen[a].span else [], symptom=s.name)  # type: ignore[attr-defined]


def _check_missing_blame(v: "_Validator") -> None:
    """RK208: a symptom whose blame resolves to nothing."""
    for s in v.symptoms.values():
        if v.registry.info(s.name).blame is None:  # type: ignore[attr-defined]
            v.add("RK208", f"symptom `{s.name}` has no blame: set `blame` on it or on an outcome rule "  # type: ignore[attr-defined]
                  f"whose prefix it has ({', '.join(BLAMES)})", s.span, symptom=s.name)  # type: ignore[attr-defined]


def _check_outcome_rules(v: "_Validator") -> None:
    """RK106 / RK110 on `[[outcome_rule]]` prefixes."""
    for r in v.ruleset.outcome_rules:
        if r.outcome is not None and r.outcome not in OUTCOMES:
            v.add("RK106", f"outcome rule `{r.prefix}` has outcome `{r.outcome}`; use one of {', '.join(OUTCOMES)}", r.span)
        _check_blame(v, f"outcome rule `{r.prefix}`", r.blame, r.action, r.span)


class _RuleChecks:
    """What each rule's own validator found (its diagnostics, the symptoms and prefixes it
    uses), by rule object, for the registry it was checked against.  A rule's check is a
    function of the rule and the registry alone, and an edit re-parses one file: the
    language server re-checks that file's rules, not the corpus's.  Bounded: cleared when
    it holds `limit` rules or the registry changes."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self.registry: tuple | None = None
        self.by_id: dict[int, tuple] = {}  # id(rule) -> (rule, diags, used, used_prefixes)
        self.by_content: dict = {}  # rule -> the same (rules are frozen: equal rules, equal checks)

    def validate(self, rule, v: "_Validator") -> None:
        fp = v.registry.fingerprint()
        if self.registry is not fp and self.registry != fp:
            self.by_id, self.by_content = {}, {}
        self.registry = fp
        got = self.by_id.get(id(rule))
        if got is None or got[0] is not rule:
            # a re-parsed rule equal to one checked before (the file's other rules, when one
            # changed) is found by content; a rule that cannot be hashed is checked each time
            try:
                got = self.by_content.get(rule)
                hashable = True
            except TypeError:
                got, hashable = None, False
            if got is None:
                sub = _Validator(v.ruleset, v.registry)
                RULE_TYPES[rule.kind.value].validate(rule, sub)
                got = (rule, tuple(sub.diags), frozenset(sub.used), frozenset(sub.used_prefixes))
                if hashable:
                    self.by_content[rule] = got
            if len(self.by_id) >= self.limit or len(self.by_content) >= self.limit:
                self.by_id, self.by_content = {}, {}
            self.by_id[id(rule)] = (rule, *got[1:])
        v.diags.extend(got[1])
        v.used |= got[2]
        v.used_prefixes |= got[3]


_RULE_CHECKS = _RuleChecks()


def _check_rules(v: "_Validator") -> None:
    """RK201 names defined twice; then each rule's own validator (RULE_TYPES, memoized per rule)."""
    for rule in v.ruleset.rules:
        prev = v.rules.get(rule.name)
        if prev is not None:
            v.add("RK201", f"rule `{rule.name}` is defined twice (also at {prev.span}){_bundled_hint(prev.span)}",  # type: ignore[attr-defined]
                  rule.span,
                  [Related(prev.span, f"`{rule.name}` first defined here")], rule=rule.name)  # type: ignore[attr-defined]
            continue
        v.rules[rule.name] = rule
        _RULE_CHECKS.validate(rule, v)


def _check_dependencies(v: "_Validator") -> None:
    """RK204: `requires` naming no rule."""
    for rule in v.ruleset.rules:
        for dep in rule.requires:
            if dep not in v.rules:
                v.add("RK204", f"`{rule.name}` requires `{dep}`, which is not defined{did_you_mean(dep, v.rules)}",
                      rule.span, rule=rule.name, missing=dep)


def _finalize_unused_symptoms(v: "_Validator") -> None:
    """RK205 (warning): not emitted, not named by a rule, not mentioned in plugin code."""
    code_text = "\n".join(v.plugin_texts)
    for s in v.ruleset.symptoms:
        if s.name in v.used or any(s.name.startswith(p) for p in v.used_prefixes if p):
            continue
        if s.name in code_text or any(a in code_text for a in s.aliases):
            continue
        v.add("RK205", f"symptom `{s.name}` is registered but no rule emits it", s.span, symptom=s.name)


def _finalize_plugin_literals(v: "_Validator") -> None:
    """RK209: misspelt symptom names in plugin string literals."""
    v.diags.extend(plugin_literal_diagnostics(v.plugin_files, v.registry))


def _finalize_dsl_references(v: "_Validator") -> None:
    """RK206: DSL rules naming Python plugin rules (`uses python X`) that no file defines."""
    if any(getattr(r, "decl", None) is not None for r in v.ruleset.rules):
        from rulekit.rules import dsl

        v.diags.extend(dsl.check_references(v.ruleset, set(r.name for r in v.ruleset.rules)))


CorpusCheck = Callable[["_Validator"], None]
CORPUS_CHECKS: tuple[tuple[str, CorpusCheck], ...] = (
    ("symptoms", _check_symptoms),
    ("aliases", _check_aliases),
    ("missing-blame", _check_missing_blame),
    ("outcome-rules", _check_outcome_rules),
    ("rules", _check_rules),
    ("dependencies", _check_dependencies),
)
FINALIZE: tuple[tuple[str, CorpusCheck], ...] = (
    ("unused-symptoms", _finalize_unused_symptoms),
    ("plugin-literals", _finalize_plugin_literals),
    ("dsl-references", _finalize_dsl_references),
)


def check_corpus(ruleset: RuleSet, registry: SymptomRegistry, plugin_files: Mapping[str, str] | None = None,
                 plugin_texts: Iterable[str] | None = None) -> list[Diagnostic]:
    """Every cross-file problem of a corpus: CORPUS_CHECKS, then FINALIZE, in order.

    plugin_files: path -> source of each `.py` rule file; plugin_texts: the sources whose
    mentions keep a symptom "used" (default: those of plugin_files; the language server
    passes the text it last executed)."""
    files = dict(plugin_files or {})
    v = _Validator(ruleset, registry, plugin_files=files,
                   plugin_texts=list(files.values()) if plugin_texts is None else list(plugin_texts))
    for _name, step in CORPUS_CHECKS + FINALIZE:
        step(v)
    return v.diags


def validate(ruleset: RuleSet, registry: SymptomRegistry, plugin_texts: Iterable[str] = ()) -> list[Diagnostic]:
    """CORPUS_CHECKS and the unused-symptom step only (no plugin literals, no DSL
    references): what the language server called before `check_corpus` existed."""
    v = _Validator(ruleset, registry, plugin_texts=list(plugin_texts))
    for _name, step in CORPUS_CHECKS + FINALIZE[:1]:
        step(v)
    return v.diags


# ---- loading ----------------------------------------------------------------------------

@dataclass
class LoadResult:
    engine: RuleEngine | None
    diagnostics: list[Diagnostic]
    ruleset: RuleSet
    files: list[Path] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.engine is not None


# ---- reading and parsing one file (public: the language server calls these too) ---------------

def read_rule_file(f: Path) -> tuple[str | None, Diagnostic | None]:
    """The text of one rule (or job-test) file, or the RK001 that says why it cannot be read."""
    try:
        return f.read_bytes().decode("utf-8"), None
    except UnicodeDecodeError as e:
        return None, Diagnostic("RK001", f"`{f.name}` is not UTF-8 (byte {e.start})", Span(str(f), 1, 1))
    except OSError as e:
        return None, Diagnostic("RK001", f"cannot read `{f}`: {e.strerror}", Span(str(f), 1, 1))


@dataclass
class ParsedFile:
    """One declarative file parsed by its front-end: its rules (or job tests), its own
    diagnostics, and for a `.rule` file the DSL syntax tree (`module`)."""
    ruleset: RuleSet
    diagnostics: list[Diagnostic]
    module: object | None = None


def parse_rule_text(text: str, path: str, cache: CorpusCache | None = None) -> ParsedFile:
    """Parse one `*.toml`, `*.test.toml` or `*.rule` file's text as the loader does
    (a `.rule` declaration with a syntax error keeps none of its semantic complaints).
    `cache`: the compiled-corpus cache, read and filled for TOML and DSL parses.
    Python plugins are executed, not parsed: see `load_plugin`."""
    def cached(table: str, build: Callable[[], Any]) -> Any:
        got = getattr(cache, table).get(path) if cache is not None else None
        if got is None:
            got = build()
            if cache is not None:
                getattr(cache, table)[path] = got
        return got

    def toml(parse: str) -> Callable[[], Any]:
        def build() -> Any:
            from rulekit.rules import toml_frontend  # imported only when a file is parsed (not on a cache hit)

            return getattr(toml_frontend, parse)(text, path)
        return build

    if path.endswith(".test.toml"):
        cases, diags = cached("tests", toml("parse_job_tests"))
        return ParsedFile(RuleSet(job_tests=list(cases)), list(diags))
    if path.endswith(".toml"):
        parsed = cached("tomls", toml("parse_rules"))
        return ParsedFile(parsed[0], parsed[1])
    if path.endswith(".rule"):
        from rulekit.rules import dsl

        ast_ = cached("asts", lambda: dsl.parse_ast(text, path))
        rs, diags = dsl.compile_parsed(ast_[0], ast_[1], path)
        return ParsedFile(rs, diags, ast_[0])
    raise ValueError(f"{path}: not a declarative rule file (*.toml, *.test.toml, *.rule)")


class RuleLoader:
    """One loading pass over one or more rule folders (or single rule files)."""

    def __init__(self, config: GlobalConfig | None = None, overlay: dict[str, str] | None = None,
                 plugin_timeout: float | None = None, use_cache: bool | None = None,
                 options: EngineOptions | None = None):
        self.config = config or GlobalConfig()
        self.options = options or EngineOptions.from_env()
        self.plugin_timeout = plugin_timeout if plugin_timeout is not None and plugin_timeout > 0 \
            else self.options.plugin_timeout
        self._verdicts: dict[str, sandbox.Verdict] = {}
        # the compiled-corpus cache (rulekit.rules.corpus_cache); off for editor overlays
        self.use_cache = not overlay if use_cache is None else use_cache
        self._cache: CorpusCache | None = None
        # unsaved editor buffers: path -> text, used instead of the file on disk
        self.overlay = {str(Path(k).resolve()): v for k, v in (overlay or {}).items()}
        self.ruleset = RuleSet()
        self.diagnostics: list[Diagnostic] = []
        self.files: list[Path] = []
        self.texts: dict[str, str] = {}
        self._plugin_files: dict[str, str] = {}
        self._packages: dict[Path, str] = {}
        assert {"extractor", "accumulator", "filter", "refiner", "collector"} <= set(RULE_TYPES)

    # step 4 of the initialization order
    def load_all(self, paths: Sequence[str | Path] | None = None) -> "RuleLoader":
        roots = [Path(p) for p in (paths or [bundled_rules_path()])]
        if self.use_cache:
            self._cache = open_cache(roots, self.options.cache_dir)
        for p in roots:
            self._load_path(p)
        return self

    def _probe(self, plugins: list[Path], folder: Path) -> None:
        """Import the folder's plugins in a child process first (rulekit.rules.sandbox);
        the bundled corpus ships with rulekit and is trusted."""
        if not plugins or _is_bundled(folder):
            return
        items = []
        for f in plugins:
            text = self.overlay.get(str(f.resolve()))
            if text is None:
                try:
                    text = f.read_bytes().decode("utf-8")
                except (OSError, UnicodeDecodeError):
                    continue  # _read reports it
            items.append((str(f), text))
        self._verdicts.update(sandbox.probe_plugins(items, self.plugin_timeout))

    def _load_path(self, path: Path) -> None:
        if path.is_file():
            if path.suffix == ".py":
                self._probe([path], path.parent)
            self._load_file(path, path.parent)
            return
        if not path.is_dir():
            self.diagnostics.append(Diagnostic("RK001", f"rule path `{path}` does not exist or is not a folder",
                                               Span(str(path), 1, 1)))
            return
        files = sorted(f for f in path.iterdir() if f.is_file() and is_rule_file(f))
        if path.resolve().name == "rulekit" and not _is_bundled(path):
            self.diagnostics.append(Diagnostic(
                "RK009", f"rule folder `{path}` is named `rulekit`: a script beside it that imports rulekit "
                "imports this folder instead; name it `rules`", Span(str(path), 1, 1)))
        self._probe([f for f in files if f.suffix == ".py"], path)
        if not files and not any(f.name.endswith(".test.toml") for f in path.iterdir()):
            self.diagnostics.append(Diagnostic("RK005", f"`{path}` holds no rule files (*.toml, *.rule, *.py)",
                                               Span(str(path), 1, 1)))
        for f in files:
            self._load_file(f, path)
        for f in sorted(path.glob("*.test.toml")):
            self._load_job_tests(f)

    def _read(self, f: Path) -> str | None:
        over = self.overlay.get(str(f.resolve()))
        if over is not None:
            self.texts[str(f)] = over
            return over
        text, problem = read_rule_file(f)
        if problem is not None:
            self.diagnostics.append(problem)
            return None
        self.texts[str(f)] = text  # type: ignore[assignment]
        return text

    def _load_file(self, f: Path, folder: Path) -> None:
        if f.name.endswith(".test.toml"):
            self._load_job_tests(f)
            return
        text = self._read(f)
        if text is None:
            return
        self.files.append(f)
        if f.suffix in (".toml", ".rule"):
            parsed = parse_rule_text(text, str(f), self._cache)
            rs, diags = parsed.ruleset, parsed.diagnostics
        elif f.suffix == ".py":
            if folder not in self._packages:
                self._packages[folder] = _package_for(folder)
            rs, diags = load_plugin(f, self._packages[folder], text, self._verdicts.get(str(f)), self._cache,
                                    timeout=self.plugin_timeout)
            self._plugin_files[str(f)] = text
        else:
            return
        self.ruleset.extend(rs)
        self.diagnostics.extend(diags)

    def _load_job_tests(self, f: Path) -> None:
        text = self._read(f)
        if text is None:
            return
        p = parse_rule_text(text, str(f), self._cache)
        self.ruleset.job_tests.extend(p.ruleset.job_tests)
        self.diagnostics.extend(p.diagnostics)

    def registry(self) -> SymptomRegistry:
        return SymptomRegistry(self.ruleset.symptoms, self.ruleset.outcome_rules)

    def build(self, strict: bool = True) -> RuleEngine | None:
        """Validate and freeze.  strict: raise RulekitError on any error; otherwise
        return None when there are errors (diagnostics are in self.diagnostics)."""
        registry = self.registry()
        # a plugin's import can end differently with the same files (a time limit, the environment):
        # a load where any plugin did not import cleanly is neither taken from nor put in the cache
        plugin_trouble = any(d.code in _PLUGIN_CODES for d in self.diagnostics) or (
            self._cache is not None and self._cache.hit
            and any(getattr(d, "code", None) in _PLUGIN_CODES for d in self._cache.diagnostics or []))
        if plugin_trouble and self._cache is not None:
            self._cache = None
        if self._cache is not None and self._cache.hit:
            # the same files and code as when these were computed: validation's verdict holds
            self.diagnostics = list(self._cache.diagnostics or [])
        else:
            self.diagnostics.extend(check_corpus(self.ruleset, registry, self._plugin_files))
            self.diagnostics = hold_back_follow_ons(apply_suppressions(self.diagnostics, self.texts), self.texts)
            if self._cache is not None:
                self._cache.store(self.diagnostics)
        if has_errors(self.diagnostics):
            if strict:
                raise RulekitError([d for d in self.diagnostics if d.severity is Severity.ERROR])
            return None
        return RuleEngine(self.ruleset, registry, self.config, self.options)


_PLUGIN_CODES = frozenset({"RK004", "RK006", "RK007"})


def is_rule_file(f: Path) -> bool:
    return f.suffix in RULE_SUFFIXES and not f.name.endswith(".test.toml") and not f.name.startswith("_")


def load_corpus(paths: Sequence[str | Path] | None = None, config: GlobalConfig | None = None,
                overlay: dict[str, str] | None = None, plugin_timeout: float | None = None,
                options: EngineOptions | None = None) -> LoadResult:
    """Load and validate a corpus, collecting every problem (never raises on user input).

    overlay: path -> text of unsaved buffers (the language server), read instead of disk.
    plugin_timeout: seconds each Python plugin's import may take (default: options.plugin_timeout).
    options: the engine options (default: `EngineOptions.from_env()`); the engine keeps them."""
    loader = RuleLoader(config, overlay, plugin_timeout, options=options).load_all(paths)
    engine = loader.build(strict=False)
    diags = sorted(loader.diagnostics, key=Diagnostic.sort_key)
    return LoadResult(engine, diags, loader.ruleset, loader.files, loader.texts)


# ---- Python plugins -----------------------------------------------------------------------

_package_for = sandbox.package_for


def _is_bundled(folder: Path) -> bool:
    try:
        return folder.resolve() == bundled_rules_path().resolve()
    except OSError:
        return False


def load_plugin(f: Path, pkg: str, text: str, verdict: "sandbox.Verdict | None",
                cache: CorpusCache | None = None, timeout: float | None = None) -> tuple[RuleSet, list[Diagnostic]]:
    """A plugin file as the probe saw it: an import that timed out, exited or killed
    the child is reported (and not run here); otherwise it is executed in this process
    (from the corpus cache's bytecode when it has this text's), under the same time
    limit (`timeout`, default the plugin time limit): a plugin may finish in the probe
    and loop the second time.  The probe's captured output becomes a note (RK007)."""
    diags: list[Diagnostic] = []
    if verdict is not None and verdict.output.strip():
        diags.append(_output_note(f, verdict.output))
    if verdict is not None and verdict.status in ("timeout", "base", "died"):
        code = "RK006" if verdict.status == "timeout" else "RK004"
        line = max(1, verdict.line)
        diags.append(Diagnostic(code, verdict.message, Span(str(f), line, 1, line, 2),
                                data={"seconds": round(verdict.seconds, 3)} if verdict.status == "timeout" else {}))
        return RuleSet(files=[str(f)]), diags
    rs, more = exec_plugin(f, pkg, text, report_output=verdict is None, cache=cache, timeout=timeout)
    return rs, diags + more


def _output_note(f: Path, output: str) -> Diagnostic:
    shown = output.strip()
    return Diagnostic("RK007", f"plugin wrote while it was imported (captured, not shown on rulekit's output): {shown}",
                      Span(str(f), 1, 1, 1, 2), data={"output": output})


class _fd_capture:
    """Send file descriptors 1 and 2 to a temporary file for the duration (writes that
    bypass sys.stdout: os.write, C extensions, child processes).  The caller runs
    on the thread that owns our output, so nothing of ours is caught."""

    def __enter__(self) -> "_fd_capture":
        import tempfile

        self._data = b""
        self._saved: list[tuple[int, int]] = []
        try:
            self._tmp = tempfile.TemporaryFile()
            for fd in (1, 2):
                try:
                    os.fstat(fd)
                except OSError:
                    continue
                for stream in (sys.__stdout__, sys.__stderr__):
                    try:
                        stream.flush()  # type: ignore[union-attr]
                    except Exception:  # noqa: BLE001 - a closed or absent stream
                        pass
                self._saved.append((fd, os.dup(fd)))
                os.dup2(self._tmp.fileno(), fd)
        except OSError:
            self._restore()
        return self

    def _restore(self) -> None:
        for fd, saved in self._saved:
            os.dup2(saved, fd)
            os.close(saved)
        self._saved = []

    def __exit__(self, *exc) -> None:
        self._restore()
        try:
            self._tmp.seek(0)
            self._data = self._tmp.read()
            self._tmp.close()
        except (OSError, AttributeError):
            pass

    def text(self) -> str:
        return self._data.decode("utf-8", "replace")


def exec_plugin(f: Path, pkg: str, text: str, report_output: bool = True,
                cache: CorpusCache | None = None, timeout: float | None = None) -> tuple[RuleSet, list[Diagnostic]]:
    """Execute one `.py` rule file (as a module of package `pkg`) with the decorators
    bound to a fresh sink.  Its stdout/stderr writes are captured (a note when
    report_output); SystemExit and other BaseExceptions (not the user's Ctrl-C)
    become a diagnostic at the plugin's line; an import that runs past `timeout`
    seconds (default the plugin time limit) is stopped (`rulekit.rules.containment`:
    a loop in Python code, not a call blocked in C) and is an RK006.  `cache`: the
    corpus cache, whose bytecode for this text is used (and filled) instead of compiling."""
    import contextlib
    import io

    from rulekit.rules.containment import RuleTimeout, contained, of_file

    limit = sandbox.plugin_timeout(timeout)

    sink = PluginSink(file=str(f))
    token = _ACTIVE.set(sink)
    diags: list[Diagnostic] = []
    captured = io.StringIO()
    try:
        with _fd_capture() as raw, contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured), \
                contained(of_file(str(f)), limit):
            code = cache.plugin_code(str(f), text) if cache is not None else None
            if code is None:
                code = compile(text, str(f), "exec")
                if cache is not None:
                    cache.keep_code(str(f), text, code)
            module = types.ModuleType(f"{pkg}.{f.stem}")
            module.__file__ = str(f)
            module.__package__ = pkg
            sys.modules[module.__name__] = module
            exec(code, module.__dict__)
    except KeyboardInterrupt:
        raise
    except RuleTimeout as e:
        line = next((fr.lineno for fr in reversed(traceback.extract_tb(e.__traceback__)) if fr.filename == str(f)), 1)
        diags.append(Diagnostic("RK006", f"importing the plugin did not finish within {limit:g} s in this process "
                                f"(stopped at line {line}; it had finished in the probe, so it behaves differently "
                                f"on a second import); set a longer limit with `rulekit --plugin-timeout SECONDS` "
                                f"or {sandbox.ENV_TIMEOUT}", Span(str(f), line or 1, 1, line or 1, 2)))
    except BaseException as e:  # noqa: BLE001 - a plugin's own exception, SystemExit included: report it here
        msg, line, col = sandbox.describe(e, str(f))
        end = col + 1 if isinstance(e, SyntaxError) else 2
        diags.append(Diagnostic("RK004", msg, Span(str(f), line, col, line, end)))
    finally:
        _ACTIVE.reset(token)
    output = captured.getvalue() + raw.text()
    if report_output and output.strip():
        diags.insert(0, _output_note(f, output))
    return RuleSet(rules=sink.rules, symptoms=sink.symptoms, files=[str(f)]), diags


def plugin_literal_diagnostics(plugins: dict[str, str], registry: SymptomRegistry) -> list[Diagnostic]:
    """RK209: misspelt symptom names in plugin string literals (rulekit.rules.literal_check)."""
    from rulekit.rules.literal_check import misspelt_symptoms

    return misspelt_symptoms(plugins, [*registry.names(), *registry.aliases()])


# ---- follow-on errors of a file that did not parse -------------------------------------------

FOLLOW_ON_CODES = {"RK203", "RK204", "RK205", "RK206"}  # name problems a lost file can cause


def _lost_file(d: Diagnostic) -> bool:
    """A file whose declarations were (wholly or partly) lost: a TOML or Python syntax error,
    a DSL syntax error, a plugin that could not be imported."""
    return d.code in ("RK002", "RK003", "RK006") or (d.code == "RK004")


def hold_back_follow_ons(diags: list[Diagnostic], texts: dict[str, str]) -> list[Diagnostic]:
    """Drop name errors (unregistered symptom, missing rule, unused symptom) whose name
    appears in a file that did not parse: they follow from that file's error, which says
    how many were held back.  They come back by themselves once the file parses."""
    import dataclasses

    roots = [d for d in diags if _lost_file(d) and d.span is not None]
    if not roots:
        return diags
    broken = {d.span.file: texts.get(d.span.file, "") for d in roots}  # type: ignore[union-attr]
    held: dict[str, int] = {}
    out = []
    for d in diags:
        if d.code in FOLLOW_ON_CODES:
            name = d.data.get("missing") or d.data.get("symptom")
            src = next((f for f, t in broken.items() if name and isinstance(name, str) and name in t), None)
            if src is not None and (d.span is None or d.span.file != src or d.code == "RK205"):
                held[src] = held.get(src, 0) + 1
                continue
        out.append(d)
    if not held:
        return out
    first_root: dict[str, Diagnostic] = {}
    for d in roots:
        first_root.setdefault(d.span.file, d)  # type: ignore[union-attr]
    result = []
    for d in out:
        f = d.span.file if d.span is not None else None
        if f in held and first_root.get(f) is d:
            n = held[f]
            d = dataclasses.replace(d, message=f"{d.message} ({n} follow-on error{'s' * (n != 1)} in other files "
                                               "held back until this file loads)", data={**d.data, "held_back": n})
        result.append(d)
    return result


# ---- suppression comments --------------------------------------------------------------------

_SUPPRESS = re.compile(r"rulekit:\s*ignore\[([A-Za-z0-9_,\s-]+)\]")


def apply_suppressions(diags: list[Diagnostic], texts: dict[str, str]) -> list[Diagnostic]:
    """Drop diagnostics suppressed by `# rulekit: ignore[CODE,...]` on their line or the line above."""
    from rulekit.codes import lookup

    cache: dict[str, list[str]] = {}
    quiet: dict[str, bool] = {}  # file -> has no `rulekit:` comment (asked once per file, not per diagnostic)
    out = []
    for d in diags:
        f = d.span.file if d.span is not None else None
        plain = quiet.get(f) if f is not None else True
        if plain is None:
            plain = quiet[f] = f not in texts or "rulekit:" not in texts[f]
        if plain:
            out.append(d)  # (a file without a `rulekit:` comment suppresses nothing: no need to split it)
            continue
        lines = cache.setdefault(d.span.file, split_lines(texts[d.span.file]))
        suppressed = False
        for ln in (d.span.line, d.span.line - 1):
            if 0 < ln <= len(lines):
                m = _SUPPRESS.search(lines[ln - 1])
                if m:
                    wanted = set()
                    for part in m.group(1).split(","):
                        c = lookup(part.strip())
                        if c:
                            wanted.add(c.code)
                    if d.code in wanted:
                        suppressed = True
        if not suppressed:
            out.append(d)
    return out
