"""The workspace index: rule folders, their files, and incremental analysis.

A `Workspace` holds one or more `Corpus` objects (a corpus = the rule folders
`rulekit check` would be given together: the folders named in the settings,
else each auto-detected folder that holds rule files).  A `Corpus` keeps one
`FileState` per rule file (text, parsed RuleSet, front-end diagnostics, static
name occurrences) and re-parses only the file an edit touches; the cross-file
validation (names, dependencies, symptoms, regexes) reuses every other file's
parsed RuleSet and the loader's own `validate()` with memoized regex checks.

Python plugin files are indexed statically (`ast`, never executed) on every
change; they are executed through the loader's `exec_plugin` only when opened,
saved, or at the initial load.  Inline tests and lint run on snapshots (`TestJob`,
`LintJob`) that the server executes off the event loop.

Pure of the LSP: no lsprotocol types, no 0-based positions.  Reads rule files
from disk for files not open in the editor.
"""
from __future__ import annotations

import dataclasses

import ast
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import rulekit.rules.loader as _loader
from rulekit.diagnostics import Diagnostic, Span, has_errors
from rulekit.rules.corpus import RuleEngine
from rulekit.rules.model import RuleSet
from rulekit.rules.registry import SymptomRegistry
from rulekit.analysis.testing import TestResult, run_job_test, run_line_test
from rulekit_lsp.chunked import ChunkedToml
from rulekit_lsp.scheduling import Cancellable
from rulekit_lsp.occurrences import ALIAS, DEF, RULE, STR, SYMPTOM, Occurrence, occurrences
from rulekit_lsp.settings import Settings


class Foreground:
    """Edits first: the server marks itself busy from a `didChange` until its publish;
    background jobs (tests, lint) call `checkpoint()` between steps and wait (without
    the GIL) while it is busy, at most `max_wait` seconds each time, so the analysis
    of an edit never shares the interpreter with them."""

    def __init__(self, max_wait: float = 2.0) -> None:
        import threading

        self._idle = threading.Event()
        self._idle.set()
        self.max_wait = max_wait

    def busy(self) -> None:
        self._idle.clear()

    def idle(self) -> None:
        self._idle.set()

    def checkpoint(self) -> None:
        if not self._idle.is_set():
            self._idle.wait(self.max_wait)


FOREGROUND = Foreground()
TEST_CACHE_LIMIT = 20_000  # inline-test results kept by content key (a corpus has ~1,000 tests)


def read_rule_file(f: Path) -> tuple[str | None, list[Diagnostic]]:
    """A rule file's text as the loader reads it (UTF-8; its RK001 for unreadable or
    undecodable files): the loader's own reader, so the server and `rulekit check`
    cannot word or decide it differently."""
    text, problem = _loader.read_rule_file(f)
    return text, [problem] if problem is not None else []


SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", "build",
             "dist", ".tox", "site-packages"}
_RULE_TOML = re.compile(r"^\s*\[\[\s*(symptom|extractor|family|catalog|outcome_rule|metric_rule|case)\s*\]\]", re.M)


def file_kind(path: str) -> str:
    name = os.path.basename(path)
    if name.endswith(".test.toml"):
        return "tests"
    if name.endswith(".toml"):
        return "toml"
    if name.endswith(".rule"):
        return "rule"
    if name.endswith(".py"):
        return "py"
    if name.endswith(".log"):
        return "log"
    return "other"


def is_rule_path(path: str) -> bool:
    return file_kind(path) in ("toml", "rule", "py", "tests") and not os.path.basename(path).startswith("_")


@dataclass
class FileState:
    path: str
    kind: str
    text: str
    version: int | None = None
    is_open: bool = False
    ruleset: RuleSet = field(default_factory=RuleSet)
    diags: list[Diagnostic] = field(default_factory=list)  # front-end diagnostics
    _occ: list[Occurrence] | None = None  # static name occurrences, built on first use (not on every keystroke)
    module: object | None = None  # DSL AST
    py_tree: ast.AST | None = None
    executed_text: str | None = None  # the Python text last executed
    executed: tuple[RuleSet, list[Diagnostic]] | None = None  # what executing it gave
    last_good: RuleSet | None = None  # the RuleSet of the last text without a syntax error
    chunks: ChunkedToml | None = None  # TOML: the per-table parse reused across edits

    @property
    def occ(self) -> list[Occurrence]:
        if self._occ is None:
            self._occ = _build_occurrences(self)
        return self._occ

    @property
    def broken(self) -> bool:
        return any(d.code in ("RK002", "RK003", "RK004") for d in self.diags)


def _build_occurrences(st: FileState) -> list[Occurrence]:
    try:
        if st.kind == "rule":
            from rulekit_lsp.occurrences import dsl_occurrences
            return dsl_occurrences(st.text, st.path, st.module)
        if st.kind == "py":
            from rulekit_lsp.occurrences import python_occurrences
            return python_occurrences(st.text, st.path, st.py_tree) if st.py_tree is not None else []
        return occurrences(st.text, st.path)
    except Exception:  # an index that cannot be built is empty, never a crash
        return []


@dataclass
class Analysis:
    """The result of analysing a corpus once: merged RuleSet, registry, diagnostics."""

    ruleset: RuleSet
    registry: SymptomRegistry
    diagnostics: list[Diagnostic]
    rules: dict[str, object]
    texts: dict[str, str]
    _engine: RuleEngine | None = None

    def engine(self) -> RuleEngine:
        """The engine over this analysis's rules (built once, on first use: it compiles the scan plans lazily)."""
        if self._engine is None:
            self._engine = RuleEngine(self.ruleset, self.registry)
        return self._engine


class Corpus:
    def __init__(self, folders: Iterable[str | Path], settings: Settings | None = None, defer_plugins: bool = False,
                 context: Iterable[str | Path] = ()):
        self.folders = [str(Path(f).resolve()) for f in folders]
        self.settings = settings or Settings()
        # folders loaded underneath (the bundled rules under a user's own): their rules and
        # symptoms are known, their files are never published, tested or linted (`rulekit check
        # DIR` does the same), and they are read once per process (`context_files`)
        self.context_folders = [str(Path(f).resolve()) for f in context if str(Path(f).resolve()) not in self.folders]
        self.context: dict[str, FileState] = {}
        for f in self.context_folders:
            self.context.update(context_files(f, self.settings))
        # defer_plugins: a plugin not yet probed (rulekit.rules.sandbox) is not executed
        # here; it waits in `awaiting` for the server to probe it off the event loop
        self.defer_plugins = defer_plugins
        self.awaiting: dict[str, str] = {}  # path -> text to probe
        self.initial_pending = False  # plugins of the first load still being probed: do not publish yet
        self.files: dict[str, FileState] = {}
        self.folder_diags: list[Diagnostic] = []
        self.analysis: Analysis | None = None
        self.test_cache: dict[tuple, TestResult] = {}  # content key -> result (span of when it ran)
        self.results: dict[str, list[TestResult]] = {}  # rule name / case name -> current results
        self.slow: dict[str, list[Diagnostic]] = {}  # path -> lint diagnostics (dropped when the file changes)
        self.lint_generation = 0
        self.edit_generation = 0
        self.full_run: tuple[int, list[TestResult]] | None = None  # (edit generation, results of every test)
        self._index: dict[tuple[str, str], list[tuple[str, Occurrence]]] | None = None
        self._test_keys: dict[int, tuple[object, list[tuple]]] = {}  # id(rule) -> (rule, its tests' cache keys)
        self._keys_aliases: dict[str, str] = {}
        self.load()

    # ---- files -----------------------------------------------------------------------
    def contains(self, path: str) -> bool:
        return os.path.dirname(path) in self.folders

    def order(self) -> list[str]:
        """Files in the loader's order: the context folders', then per folder, sorted rule
        files, then *.test.toml."""
        out = []
        for folders, files in ((self.context_folders, self.context), (self.folders, self.files)):
            for folder in folders:
                mine = [p for p in files if os.path.dirname(p) == folder]
                out += sorted((p for p in mine if files[p].kind != "tests"), key=os.path.basename)
                out += sorted((p for p in mine if files[p].kind == "tests"), key=os.path.basename)
        return out

    def state(self, path: str) -> FileState:
        """A file of the corpus, its own or a context folder's."""
        st = self.files.get(path)
        return st if st is not None else self.context[path]

    def load(self) -> None:
        self.folder_diags = []
        for folder in self.folders:
            fp = Path(folder)
            if not fp.is_dir():
                self.folder_diags.append(Diagnostic("RK001", f"rule path `{folder}` does not exist or is not a folder",
                                                    Span(folder, 1, 1)))
                continue
            entries = sorted(f for f in fp.iterdir() if f.is_file())
            rule_files = [f for f in entries if is_rule_path(str(f)) and file_kind(str(f)) != "tests"]
            if not rule_files and not any(f.name.endswith(".test.toml") for f in entries):
                self.folder_diags.append(Diagnostic("RK005", f"`{fp}` holds no rule files (*.toml, *.rule, *.py)",
                                                    Span(folder, 1, 1)))
            for f in entries:
                if is_rule_path(str(f)) and str(f) not in self.files:
                    text, problems = read_rule_file(f)
                    self.folder_diags.extend(problems)
                    if text is not None:
                        self.update(str(f), text, execute=True)
        self.initial_pending = bool(self.awaiting)

    def update(self, path: str, text: str, version: int | None = None, execute: bool = False) -> FileState:
        """Re-parse one file (the only work an edit costs besides cross-file validation)."""
        kind = file_kind(path)
        st = self.files.get(path)
        if st is None:
            st = self.files[path] = FileState(path, kind, text)
        st.text, st.version = text, version
        self.edit_generation += 1
        self.slow.pop(path, None)
        self.analysis = None
        self._index = None
        if kind == "toml":
            if st.chunks is None:
                st.chunks = ChunkedToml(path)
            st.ruleset, st.diags = st.chunks.parse(text)  # = parse_rules(text, path), one table re-parsed
        elif kind in ("tests", "rule"):  # the loader's own parse (a .rule file's syntax tree kept for the editor)
            parsed = _loader.parse_rule_text(text, path)
            st.ruleset, st.diags, st.module = parsed.ruleset, parsed.diagnostics, parsed.module
        elif kind == "py":
            self._update_python(st, execute)
        st._occ = None
        if not st.broken:
            st.last_good = st.ruleset
        return st

    def _update_python(self, st: FileState, execute: bool) -> None:
        try:
            st.py_tree = ast.parse(st.text, st.path)
            syntax = None
        except SyntaxError as e:
            st.py_tree = None
            line, col = e.lineno or 1, e.offset or 1
            syntax = Diagnostic("RK004", f"syntax error in plugin: {e.msg}", Span(st.path, line, col, line, col + 1))
        except ValueError as e:  # e.g. null bytes
            st.py_tree = None
            syntax = Diagnostic("RK004", f"syntax error in plugin: {e}", Span(st.path, 1, 1, 1, 2))
        if st.executed is not None and st.executed_text == st.text:
            # back to the text last executed (an undo, a save of it): its own results, not the interim text's
            st.ruleset, st.diags = st.executed[0], list(st.executed[1])
            return
        if execute:
            got = self.execute_plugin(st.path, st.text)
            if got is not None:
                st.ruleset, st.diags = got
                st.executed_text, st.executed = st.text, (got[0], list(got[1]))
                return
        # not executed since the last change (or waiting for its probe): keep its last
        # rules; report only what static parsing sees
        st.diags = [syntax] if syntax else [d for d in st.diags if d.code != "RK004" or "syntax" not in d.message]

    def execute_plugin(self, path: str, text: str) -> tuple[RuleSet, list[Diagnostic]] | None:
        """Load one plugin as the CLI's loader would: probed in a child process first
        (unless bundled); None when deferred (see `awaiting`)."""
        from rulekit.rules import sandbox

        folder = Path(path).parent
        verdict = None
        if not _loader._is_bundled(folder):
            timeout = self.settings.plugin_timeout_ms / 1000 if self.settings.plugin_timeout_ms else None
            verdict = sandbox.cached(path, text, timeout)
            if verdict is None:
                if self.defer_plugins:
                    self.awaiting[path] = text
                    return None
                verdict = sandbox.probe_plugins([(path, text)], timeout)[path]
        self.awaiting.pop(path, None)
        pkg = _loader._package_for(folder)
        return _loader.load_plugin(Path(path), pkg, text, verdict)

    def remove(self, path: str) -> None:
        if self.files.pop(path, None) is not None:
            self.analysis = None
            self._index = None

    # ---- analysis --------------------------------------------------------------------
    def analyze(self) -> Analysis:
        """Cross-file validation over the current texts (as `load_corpus` does, but
        reusing every file's parsed RuleSet)."""
        if self.analysis is not None:
            return self.analysis
        rs = RuleSet()
        texts: dict[str, str] = {}
        plugin_texts: list[str] = []
        diags = list(self.folder_diags)
        for p in self.order():
            st = self.state(p)
            rs.extend(st.ruleset)
            texts[p] = st.text
            diags.extend(st.diags)
            if st.kind == "py":
                plugin_texts.append(st.executed_text if st.executed_text is not None else st.text)
        registry = SymptomRegistry(rs.symptoms, rs.outcome_rules)
        # the loader's corpus-wide checks (CORPUS_CHECKS + FINALIZE); a plugin's mentions
        # count with the text last executed, its literals with the text in the editor
        diags.extend(_loader.check_corpus(rs, registry, {p: st.text for p, st in (*self.context.items(),
                                                                                   *self.files.items()) if st.kind == "py"},
                                          plugin_texts))
        diags = _loader.hold_back_follow_ons(_loader.apply_suppressions(diags, texts), texts)
        rules: dict[str, object] = {}
        for r in rs.rules:
            rules.setdefault(r.name, r)
        self.analysis = Analysis(rs, registry, sorted(diags, key=Diagnostic.sort_key), rules, texts)
        return self.analysis

    def diagnostics_by_file(self) -> dict[str, list[Diagnostic]]:
        """Everything to publish: analysis + lint (slow) + failing tests, per file."""
        a = self.analyze()
        out: dict[str, list[Diagnostic]] = {p: [] for p in self.files}
        seen: set[tuple] = set()

        def add(d: Diagnostic) -> None:
            if d.span is None or d.span.file in self.context:  # a context folder's file: not ours to report
                return
            key = (d.code, d.span, d.message)
            if key in seen:
                return
            seen.add(key)
            out.setdefault(d.span.file, []).append(d)

        for d in a.diagnostics:
            add(d)
        for ds in self.slow.values():
            for d in ds:
                add(d)
        for rs in self.results.values():
            for r in rs:
                if r.kind == "line":
                    continue  # below: looked up for the current text, never yesterday's
                if not r.passed and r.span is not None and r.span.file in self.files:
                    add(r.diagnostic())
        for d in self.line_test_diagnostics(a):
            add(d)
        return out

    def line_test_diagnostics(self, a: "Analysis") -> list[Diagnostic]:
        """Failing inline tests of the current rules, from the content-keyed test cache:
        after an undo the result of the text that is back is shown at once; a test whose
        current content has not run yet shows nothing until it has."""
        from dataclasses import replace

        out = []
        aliases = a.registry.aliases()
        if aliases != self._keys_aliases:  # every key depends on the aliases: start over
            self._test_keys, self._keys_aliases = {}, dict(aliases)
        memo, keys = self._test_keys, {}
        for r in a.ruleset.rules:
            tests = getattr(r, "tests", ()) or ()
            if not tests:
                continue
            got = memo.get(id(r))  # a rule object is reused until its file is parsed again
            if got is None or got[0] is not r:
                got = (r, [_test_key(r, t, aliases) for t in tests])
            keys[id(r)] = got
            for i, (t, key) in enumerate(zip(tests, got[1])):
                res = self.test_cache.get(key)
                if res is not None and not res.passed and t.span is not None and t.span.file in self.files:
                    out.append(replace(res, span=t.span, name=f"{r.name} #{i + 1}").diagnostic())
        self._test_keys = keys  # only the current rules' keys: the memo never grows
        return out

    def known_symptoms(self) -> list:
        """Registered symptoms, plus those of files that are mid-edit with a syntax
        error (from their last good parse), for completion."""
        a = self.analyze()
        out = {s.name: s for s in a.registry.all()}
        for st in self.files.values():
            if st.broken and st.last_good is not None:
                for s in st.last_good.symptoms:
                    out.setdefault(s.name, s)
        return [out[k] for k in sorted(out)]

    def known_rules(self) -> list:
        a = self.analyze()
        out = dict(a.rules)
        for st in self.files.values():
            if st.broken and st.last_good is not None:
                for r in st.last_good.rules:
                    out.setdefault(r.name, r)
        return list(out.values())

    # ---- name index ----------------------------------------------------------------------
    def index(self) -> dict[tuple[str, str], list[tuple[str, Occurrence]]]:
        """(kind, name) -> every occurrence across the corpus, definitions first."""
        if self._index is not None:
            return self._index
        a = self.analyze()
        symptoms = set(a.registry.names()) | set(a.registry.aliases())
        rules = set(a.rules)
        idx: dict[tuple[str, str], list[tuple[str, Occurrence]]] = {}
        for p in self.order():
            for o in self.state(p).occ:
                kind = o.kind
                if o.role == STR:
                    kind = SYMPTOM if o.name in symptoms else RULE if o.name in rules else None
                if kind is None:
                    continue
                idx.setdefault((kind, o.name), []).append((p, o))
        for v in idx.values():
            v.sort(key=lambda po: 0 if po[1].role in (DEF, ALIAS) else 1)
        self._index = idx
        return idx

    def occurrence_at(self, path: str, line: int, col: int) -> tuple[str, Occurrence] | None:
        """The indexed (kind, occurrence) under a position (col may sit just after the name)."""
        st = self.files.get(path)
        if st is None:
            return None
        a = self.analyze()
        symptoms = set(a.registry.names()) | set(a.registry.aliases())
        for o in st.occ:
            s = o.span
            if s.line == line and s.col <= col <= s.end_col:
                kind = o.kind
                if o.role == STR:
                    kind = SYMPTOM if o.name in symptoms else RULE if o.name in a.rules else None
                if kind is not None:
                    return kind, o
        return None

    # ---- tests -----------------------------------------------------------------------------
    def test_job(self, paths: Iterable[str] | None = None, rule: str | None = None, jobs: bool = False) -> "TestJob":
        """A snapshot of the tests to run: the rules defined in `paths` (all when None),
        or one rule; `jobs` adds the job-level cases of those files."""
        a = self.analyze()
        wanted = set(paths) if paths is not None else (set(self.files) if self.context else None)
        rules = [r for r in a.ruleset.rules if getattr(r, "tests", ())
                 and (rule is None or r.name == rule or r.name.split("[")[0] == rule)
                 and (wanted is None or r.span.file in wanted)]
        cases = [c for c in a.ruleset.job_tests if jobs and rule is None
                 and (wanted is None or (c.span is not None and c.span.file in wanted))]
        return TestJob(a.ruleset, a.registry, rules, cases, dict(self.test_cache),
                       full=paths is None and rule is None and jobs, generation=self.edit_generation)

    def apply_tests(self, job: "TestJob", results: dict[str, list[TestResult]], cache: dict[tuple, TestResult]) -> None:
        """Merge a test run: its cache entries always (content-keyed, so never stale), its
        per-rule results and the full-run record only when it ran to the end."""
        self.test_cache.update(cache)
        if len(self.test_cache) > TEST_CACHE_LIMIT:  # typing makes a new key per text: keep the newest
            for k in list(self.test_cache)[: len(self.test_cache) - TEST_CACHE_LIMIT]:
                del self.test_cache[k]
        if not job.complete:
            return
        self.results.update(results)
        if job.full:
            self.full_run = (job.generation, [r for rs in results.values() for r in rs])

    def test_summary(self, names: Iterable[str]) -> tuple[int, int, int] | None:
        """(passed, failed, total) over the current results of these rules/cases; None: never run."""
        got = [r for n in names for r in self.results.get(n, [])]
        if not got:
            return None
        passed = sum(r.passed for r in got)
        return passed, len(got) - passed, len(got)

    # ---- lint ------------------------------------------------------------------------------
    def lint_job(self) -> "LintJob | None":
        a = self.analyze()
        self.lint_generation += 1
        results = self.full_run[1] if self.full_run and self.full_run[0] == self.edit_generation else None
        return LintJob(self.lint_generation, a, list(self.files), self.settings.sample_log, results,
                       self.settings.lint_config, edit_generation=self.edit_generation,
                       focus=frozenset(self.files) if self.context else None)

    def apply_lint(self, job: "LintJob", diags: list[Diagnostic]) -> bool:
        """Adopt a lint's findings; False (nothing changed) when a newer lint was started
        or any file changed since its snapshot: its findings describe texts that are
        gone (the edit scheduled the lint that replaces it)."""
        if job.generation != self.lint_generation or job.edit_generation != self.edit_generation:
            return False
        by_file: dict[str, list[Diagnostic]] = {}
        known = {(d.code, d.span, d.message) for d in self.analyze().diagnostics}
        for d in diags:
            if d.span is not None and (d.code, d.span, d.message) not in known:
                by_file.setdefault(d.span.file, []).append(d)
        self.slow = by_file
        return True


def _rule_key(rule) -> tuple:
    e = getattr(rule, "emit", None)
    emit = (e.type, e.symptom, e.node, e.fields) if e is not None else None
    return (getattr(rule, "match_re", None), emit, getattr(rule, "sources", ()), getattr(rule, "formats", ()),
            getattr(rule, "lookup", ()), getattr(rule, "origin", None), rule.name)


def _test_key(rule, t, aliases: dict[str, str]) -> tuple:
    """What a test result depends on: the rule's content and the test's own fields
    (a line test's line, a metric test's samples, ...), never its position."""
    fields = tuple((f.name, repr(getattr(t, f.name))) for f in dataclasses.fields(t) if f.name not in ("span", "parts"))
    metric = (getattr(rule, "metric", None), repr(getattr(rule, "condition", None)), repr(getattr(rule, "labels", None)))
    return (_rule_key(rule), metric, fields, aliases.get(getattr(t, "symptom", None) or "", None))


@dataclass
class TestJob:
    """Inline/job tests to run off the event loop, on an immutable snapshot."""

    ruleset: RuleSet
    registry: SymptomRegistry
    rules: list
    cases: list
    cache: dict[tuple, TestResult]
    full: bool = False  # every test of the corpus
    generation: int = 0
    stop: Cancellable = field(default_factory=Cancellable)  # superseded: stop at the next test
    complete: bool = True  # False when stopped early (its cache entries are still right)

    def run(self) -> tuple[dict[str, list[TestResult]], dict[tuple, TestResult]]:
        from dataclasses import replace

        results: dict[str, list[TestResult]] = {}
        new_cache: dict[tuple, TestResult] = {}
        self.complete = True
        try:
            engine = RuleEngine(self.ruleset, self.registry)
        except Exception as e:  # a corpus that cannot even be organised: every test is an error
            for r in self.rules:
                results[r.name] = [TestResult("line", f"{r.name} #{i + 1}", False, t.span, r.name,
                                              error=f"could not build the rule engine: {e}") for i, t in enumerate(r.tests)]
            return results, new_cache
        aliases = self.registry.aliases()
        keys = {id(r): [_test_key(r, t, aliases) for t in r.tests] for r in self.rules}
        todo = sum(1 for ks in keys.values() for k in ks if k not in self.cache)
        if todo > max(WHOLE_PLAN_TESTS, len(self.ruleset.rules) // 2):
            # many tests to run for the corpus's size (the first run of all): one acceleration
            # structure over every rule, which each test narrows to its rules, instead of one
            # built per test (~3 ms each).  Not for one file's tests (cached or not): the
            # structure of a corpus of thousands of rules costs seconds (a Hyperscan compile)
            engine.scan_plan("applog", "text")
        for r in self.rules:
            out = []
            for i, t in enumerate(r.tests):
                key = keys[id(r)][i]
                res = self.cache.get(key)
                if res is None:
                    FOREGROUND.checkpoint()
                    if self.stop.cancelled:  # a newer edit wants its own run: keep what is done
                        self.complete = False
                        return results, new_cache
                    try:
                        res = run_line_test(engine, r, t, i)
                    except Exception as e:  # noqa: BLE001 - a test that cannot run is a result
                        res = TestResult("line", f"{r.name} #{i + 1}", False, t.span, r.name,
                                         error=f"could not run: {type(e).__name__}: {e}")
                    new_cache[key] = res
                out.append(replace(res, span=t.span, name=f"{r.name} #{i + 1}"))
            results[r.name] = out
        for c in self.cases:
            FOREGROUND.checkpoint()
            if self.stop.cancelled:
                self.complete = False
                return results, new_cache
            try:
                res = run_job_test(engine, c)
            except Exception as e:  # noqa: BLE001
                res = TestResult("job", c.name, False, c.span, error=f"could not run: {type(e).__name__}: {e}")
            results.setdefault(c.name, []).append(res)
        return results, new_cache


_MEMO_READ = False
WHOLE_PLAN_TESTS = 50  # tests to run (not cached), and half the corpus's rules, above which a test run
# builds the corpus's whole scan plan
MEMO_SAVE_INTERVAL_S = 60.0  # the lint memo is written after the first lint, then at most this often


def _warm_lint_memo() -> None:
    """Once per process, before the first lint: read the lint memo a previous server
    (or `rulekit lint`) left on disk, so a first lint searches only new pairs."""
    global _MEMO_READ
    if not _MEMO_READ:
        _MEMO_READ = True
        from rulekit.analysis.lint import load_memo

        load_memo()


class LintStopped(BaseException):
    """Raised at a lint checkpoint when the job was cancelled (a BaseException, so the
    lint's own `except Exception` handlers let it through)."""


@dataclass
class LintJob:
    """Lint (`rulekit.analysis.lint.lint_corpus`) on a snapshot, as `rulekit lint
    --no-cost` does it: only for a corpus that loads (the CLI refuses otherwise),
    without timing the patterns (RK308 is noisy and slow in an editor), with test
    coverage (RK402/RK403) only when every test of the corpus has been run since
    the last edit."""

    generation: int
    analysis: Analysis
    files: list[str]
    sample_log: str | None
    test_results: list[TestResult] | None = None
    lint_config: str | None = None
    edit_generation: int = 0  # the corpus's edit generation of the snapshot
    stop: Cancellable = field(default_factory=Cancellable)  # its corpus was rebuilt: stop at a checkpoint
    focus: frozenset[str] | None = None  # the files linted (None: all); the rest is context

    def checkpoint(self) -> None:
        FOREGROUND.checkpoint()
        if self.stop.cancelled:
            raise LintStopped

    def run(self) -> list[Diagnostic] | None:
        """The lint's diagnostics; None when stopped (nothing to apply)."""
        try:
            self.checkpoint()  # stopped before it started (a lint that memo hits finish may never check)
            return self._run()
        except LintStopped:
            return None

    def _run(self) -> list[Diagnostic]:
        try:
            from rulekit.analysis.lint import lint_corpus
        except ImportError:  # the toolkit's lint is not installed: nothing to add
            return []
        a = self.analysis
        if has_errors(a.diagnostics):
            return []
        try:
            engine = RuleEngine(a.ruleset, a.registry)
        except Exception:  # noqa: BLE001
            return []
        load_result = _loader.LoadResult(engine, list(a.diagnostics), a.ruleset, [Path(p) for p in self.files],
                                         dict(a.texts))
        sample = None
        if self.sample_log:
            try:
                sample = Path(self.sample_log).read_bytes()
            except OSError:
                sample = None
        config = None
        if self.lint_config:
            from rulekit.analysis.settings import load_settings

            config, _problems = load_settings(self.lint_config)  # bad keys keep their defaults, as in the CLI
        _warm_lint_memo()
        try:
            focus = self.focus
            diags = list(lint_corpus(load_result, sample, config, self.test_results, cost=False,
                                     checkpoint=self.checkpoint,
                                     focus=(lambda f: f in focus) if focus is not None else None))
        except Exception:  # noqa: BLE001 - lint is advisory; its failure must not take diagnostics down
            return []
        from rulekit.analysis.lint import save_memo

        # only when it grew, and not after every edit: the next server's first lint is then incremental too
        save_memo(at_most_every=MEMO_SAVE_INTERVAL_S)
        return diags


# ---- context folders (the bundled rules under a user's own) ---------------------------------

_CONTEXT: dict[str, tuple[tuple, dict[str, FileState]]] = {}


def _folder_signature(folder: str) -> tuple:
    try:
        return tuple(sorted((e.name, e.stat().st_mtime_ns, e.stat().st_size) for e in os.scandir(folder)
                            if e.is_file() and is_rule_path(e.path)))
    except OSError:
        return ()


def context_files(folder: str, settings: Settings) -> dict[str, FileState]:
    """A context folder's files, parsed (and its plugins executed) once per process and
    shared by every corpus that has it underneath; read again when its files change."""
    sig = _folder_signature(folder)
    got = _CONTEXT.get(folder)
    if got is None or got[0] != sig:
        got = _CONTEXT[folder] = (sig, dict(Corpus([folder], settings).files))
    return got[1]


def choose_corpora(roots: list[str], settings: Settings) -> tuple[list[tuple[list[str], list[str]]], list[Diagnostic]]:
    """(own folders, context folders) of each corpus the workspace holds, and the problems of
    its project file: the `ruleFolders` setting, else the project file found from the first
    root upward (`rulekit.rules.project`, what the command line reads), else every folder
    under the roots that holds rule files, each its own corpus.  The bundled rules go under
    each (unless the `bundled` setting or the project file says false, or the folder is the
    bundled folder itself)."""
    from rulekit.diagnostics import RulekitError
    from rulekit.rules.project import load_project

    problems: list[Diagnostic] = []
    project = None
    if roots:
        try:
            project = load_project(roots[0])
        except RulekitError as e:
            problems = list(e.diagnostics)
    use_bundled = settings.bundled if settings.bundled is not None else (
        project.bundled if project is not None and project.bundled is not None else True)
    home = str(_loader.bundled_rules_path().resolve())

    def under(folders: list[str]) -> list[str]:
        return [home] if use_bundled and home not in folders else []

    if settings.rule_folders:
        folders = []
        for f in settings.rule_folders:
            fp = Path(f)
            if not fp.is_absolute() and roots:
                fp = Path(roots[0]) / fp
            folders.append(str(fp.resolve()))
        return [(folders, under(folders))], problems
    if project is not None and project.rules:
        folders = [str(p if p.is_dir() else p.parent) for p in project.rules]
        return [(folders, under(folders))], problems
    out = []
    for r in roots:
        for folder in detect_rule_folders(r):
            out.append(([folder], under([folder])))
    return out, problems


# ---- the workspace -------------------------------------------------------------------------

def detect_rule_folders(root: str | Path, max_depth: int = 4) -> list[str]:
    """Folders under root holding rule files (a `.rule` file, a TOML file with rule
    tables, a `*.test.toml`, or a Python file importing rulekit.plugin)."""
    found: list[str] = []
    root = Path(root).resolve()
    base_depth = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        if len(Path(dirpath).parts) - base_depth >= max_depth:
            dirnames[:] = []
        if Path(dirpath).name == "common":
            continue
        for fn in sorted(filenames):
            p = os.path.join(dirpath, fn)
            if _looks_like_rules(p):
                found.append(str(Path(dirpath).resolve()))
                break
    return found


def _looks_like_rules(p: str, text: str | None = None) -> bool:
    kind = file_kind(p)
    if kind in ("rule", "tests"):
        return True
    if kind not in ("toml", "py") or os.path.basename(p).startswith("_"):
        return False
    if text is not None:
        head = text[:200_000]
    else:
        try:
            with open(p, encoding="utf-8", errors="replace") as fh:
                head = fh.read(200_000)
        except OSError:
            return False
    if kind == "toml":
        return bool(_RULE_TOML.search(head))
    return "rulekit.plugin" in head


class Workspace:
    def __init__(self, settings: Settings | None = None, defer_plugins: bool = False):
        self.settings = settings or Settings()
        self.defer_plugins = defer_plugins
        self.roots: list[str] = []
        self.corpora: list[Corpus] = []
        self._bundled: Corpus | None = None
        self.project_problems: list[Diagnostic] = []  # RK008: the project file's, published on it
        self._disk: dict[str, tuple[tuple[int, int], str]] = {}  # path -> ((mtime ns, size), its text)
        self._disk_lock = threading.Lock()

    def configure(self, roots: Iterable[str], settings: Settings | None = None) -> None:
        if settings is not None:
            self.settings = settings
        self.roots = [str(Path(r).resolve()) for r in roots]
        open_texts = {p: st for c in self.corpora for p, st in c.files.items() if st.is_open}
        self.corpora = []
        chosen, self.project_problems = choose_corpora(self.roots, self.settings)
        for folders, context in chosen:
            self.corpora.append(Corpus(folders, self.settings, self.defer_plugins, context=context))
        for p, st in open_texts.items():
            self.open(p, st.text, st.version)

    def _context_for(self, folder: str) -> list[str]:
        """What goes under a corpus started for a file outside the configured folders."""
        home = str(_loader.bundled_rules_path().resolve())
        bundled = self.settings.bundled if self.settings.bundled is not None else True
        return [home] if bundled and folder != home else []

    def corpus_for(self, path: str, create: bool = True) -> Corpus | None:
        for c in self.corpora:
            if c.contains(path):
                return c
        if create and is_rule_path(path) and Path(path).parent.name != "common":
            folder = str(Path(path).parent.resolve())
            c = Corpus([folder], self.settings, self.defer_plugins, context=self._context_for(folder))
            self.corpora.append(c)
            return c
        return None

    def corpus_near(self, path: str) -> Corpus:
        """The corpus whose folder shares the longest path prefix with path (sample logs)."""
        best, best_len = None, -1
        for c in self.corpora:
            for f in c.folders:
                n = len(os.path.commonpath([f, path]))
                if n > best_len:
                    best, best_len = c, n
        if best is not None:
            return best
        if self._bundled is None:
            self._bundled = Corpus([str(_loader.bundled_rules_path())], self.settings)
        return self._bundled

    def open(self, path: str, text: str, version: int | None = None) -> Corpus | None:
        # a file outside every known rule folder starts a corpus only if it holds rules
        # (so opening pyproject.toml reports nothing)
        c = self.corpus_for(path, create=_looks_like_rules(path, text))
        if c is None:
            return None
        st = c.update(path, text, version, execute=True)
        st.is_open = True
        return c

    def change(self, path: str, text: str, version: int | None = None) -> Corpus | None:
        c = self.corpus_for(path, create=_looks_like_rules(path, text))
        if c is None:
            return None
        st = c.update(path, text, version, execute=False)
        st.is_open = True
        return c

    def save(self, path: str, text: str | None = None) -> Corpus | None:
        c = self.corpus_for(path)
        if c is None:
            return None
        st = c.files.get(path)
        if text is None:
            text = st.text if st else Path(path).read_text(encoding="utf-8", errors="replace")
        c.update(path, text, st.version if st else None, execute=True).is_open = bool(st and st.is_open)
        return c

    def disk_changed(self, path: str, deleted: bool = False) -> Corpus | None:
        """A rule file changed on disk outside the editor (git checkout, a generator)."""
        c = self.corpus_for(path, create=False)
        if c is None:
            if deleted or not is_rule_path(path) or not _looks_like_rules(path):
                return None
            c = self.corpus_for(path)
            return c
        st = c.files.get(path)
        if st is not None and st.is_open:
            return None  # the editor's buffer wins
        if deleted:
            c.remove(path)
            return c
        if not is_rule_path(path):
            return None
        text, _problems = read_rule_file(Path(path))
        if text is not None:
            c.update(path, text, execute=True)
        else:
            c.remove(path)
            c.load()  # reports the unreadable file as the loader does
        return c

    def close(self, path: str) -> None:
        c = self.corpus_for(path, create=False)
        if c is None or path not in c.files:
            return
        c.files[path].is_open = False
        text, _problems = read_rule_file(Path(path))  # back to the saved text
        if text is not None:
            c.update(path, text, execute=True)
        else:
            c.remove(path)

    def text_of(self, path: str) -> str | None:
        for c in (*self.corpora, *([self._bundled] if self._bundled else [])):
            st = c.files.get(path)
            if st is not None:
                return st.text
        return self._read(path)

    DISK_TEXTS = 64  # texts of files not open in the editor kept at once

    def _read(self, path: str) -> str | None:
        """A file's text from disk, the same string object while the file is unchanged
        (its size and modification time): a publish converts thousands of spans into
        files of context folders (a lint finding's related place), and the conversion's
        split of a text into lines is kept per text object."""
        try:
            st = os.stat(path)
            key = (st.st_mtime_ns, st.st_size)
            got = self._disk.get(path)
            if got is not None and got[0] == key:
                return got[1]
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        with self._disk_lock:  # (requests are answered on the loop, but a worker thread may ask too)
            if len(self._disk) >= self.DISK_TEXTS:
                self._disk.pop(next(iter(self._disk)))
            self._disk[path] = (key, text)
        return text

    def file(self, path: str) -> tuple[Corpus, FileState] | None:
        c = self.corpus_for(path, create=False)
        if c is None or path not in c.files:
            return None
        return c, c.files[path]
