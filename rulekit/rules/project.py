"""The project file and the one choice of corpus every face makes from it.

A rule repository names its rule folders once, in `rulekit.toml` or in a
`[tool.rulekit]` table of `pyproject.toml`, found from the current folder
upward (the nearest folder that has one of them; a `pyproject.toml` without the
table does not count):

    rules = ["rules"]           # rule folders or files, relative to the file
    bundled = true              # the bundled corpus underneath (false: only these)
    examples = ["examples"]     # example job folders `rulekit test` and `lint` run
    store = "results.db"        # a result store the language server reads rule statistics from
    [lint]                      # analysis thresholds: the tables of analysis/defaults.toml
    [coverage]

`choose_corpus()` turns the command line's rule paths, its `--bundled` /
`--no-bundled` and the project file into a `CorpusChoice`: the paths the loader
reads (the bundled rules first, then the user's own) and which of them are the
user's (what `check`, `test` and `lint` report on).  The CLI, the language
server, the Service, the Blueprint and `setup_rules()` all call it, so they read
the same corpus.  Problems with the file are RK008 diagnostics at file:line:col.

Reads the project file only; loads no rules and imports nothing above `rules`.
"""
from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from rulekit.diagnostics import Diagnostic, RulekitError, Span
from rulekit.rules.records import dataclass

PROJECT_FILE = "rulekit.toml"
PYPROJECT = "pyproject.toml"
KEYS = ("rules", "bundled", "examples", "store")
ANALYSIS_TABLES = ("lint", "coverage")  # validated by rulekit.analysis.settings


@dataclass(frozen=True)
class Project:
    """What a project file says (paths resolved against its folder)."""

    file: Path
    rules: tuple[Path, ...] = ()
    bundled: bool | None = None  # None: not said (the bundled corpus is loaded)
    examples: tuple[Path, ...] = ()
    analysis: Mapping[str, Any] | None = None  # the [lint] / [coverage] tables as written
    store: Path | None = None  # a result store (read-only: rule statistics in the editor)

    @property
    def root(self) -> Path:
        return self.file.parent


def find_project_file(start: str | Path | None = None) -> Path | None:
    """The nearest `rulekit.toml`, or `pyproject.toml` with a `[tool.rulekit]` table, in
    `start` (default: the current folder) or a folder above it."""
    here = Path(start if start is not None else os.getcwd()).resolve()
    for folder in (here, *here.parents):
        f = folder / PROJECT_FILE
        if f.is_file():
            return f
        py = folder / PYPROJECT
        if py.is_file() and _has_tool_table(py):
            return py
    return None


def _has_tool_table(py: Path) -> bool:
    try:
        head = py.read_bytes()[:1 << 20].decode("utf-8", "replace")
    except OSError:
        return False
    if "rulekit" not in head:  # most pyproject.toml files: no parse
        return False
    try:
        data = tomllib.loads(head)
    except tomllib.TOMLDecodeError:
        return "[tool.rulekit" in head  # broken, but meant for us: read_project reports where
    return isinstance(data.get("tool"), dict) and "rulekit" in data["tool"]


def read_project(file: str | Path) -> Project:
    """The project file at `file`; RulekitError with every RK008 problem at once."""
    from rulekit.rules.toml_frontend import Locator, toml_error_span

    path = Path(file).resolve()
    where = str(file)
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise RulekitError(Diagnostic("RK008", f"cannot read project file `{file}`: "
                                      f"{getattr(e, 'strerror', None) or e}", Span(where, 1, 1))) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RulekitError(Diagnostic("RK008", f"project file `{path.name}` is not valid TOML: {e}",
                                      toml_error_span(e, text, where))) from None
    loc = Locator(text, where)
    if path.name == PYPROJECT:
        table = (data.get("tool") or {}).get("rulekit")
        regions = loc.tables("tool.rulekit")
        region = regions[0] if regions else loc.top()
        what, prefix = "[tool.rulekit]", "tool.rulekit."
    else:
        table, region, what, prefix = data, loc.top(), path.name, ""
    diags: list[Diagnostic] = []

    def err(msg: str, key: str | None = None, item: str | None = None) -> None:
        span = loc.key(region, key) if key else Span(where, 1, 1)
        if item is not None:  # the one list item the message is about, when it is on the key's line
            line = loc.lines[span.line - 1] if 0 < span.line <= loc.n else ""
            for q in ('"', "'"):
                i = line.find(q + item + q, line.find("="))
                if i >= 0:
                    span = Span(where, span.line, i + 2, span.line, i + 2 + len(item))
                    break
        diags.append(Diagnostic("RK008", msg, span, data={"key": key} if key else {}))

    if not isinstance(table, dict):
        raise RulekitError(Diagnostic("RK008", f"{what} must be a table", Span(where, 1, 1)))
    for k in table:
        if k not in KEYS and k not in ANALYSIS_TABLES:
            from rulekit.rules.suggest import did_you_mean

            err(f"unknown key `{k}` in {what}{did_you_mean(k, (*KEYS, *ANALYSIS_TABLES))}; "
                f"known: {', '.join((*KEYS, *ANALYSIS_TABLES))}", k)

    def paths(key: str) -> tuple[Path, ...]:
        v = table.get(key)
        if v is None:
            return ()
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            err(f"`{key}` in {what} must be a folder name or a list of them", key)
            return ()
        out = []
        for x in v:
            p = (path.parent / x).resolve()
            if not p.exists():
                err(f"`{key}` in {what} names {x!r}, which does not exist (looked in {p})", key, item=x)
            out.append(p)
        return tuple(out)

    rules, examples = paths("rules"), paths("examples")
    bundled = table.get("bundled")
    if bundled is not None and not isinstance(bundled, bool):
        err(f"`bundled` in {what} must be true or false", "bundled")
        bundled = None
    store = table.get("store")
    if store is not None and (not isinstance(store, str) or not store.strip()):
        err(f"`store` in {what} must be the path of a result store", "store")
        store = None
    analysis = {t: table[t] for t in ANALYSIS_TABLES if t in table}
    for t, v in analysis.items():
        if not isinstance(v, dict):
            err(f"`{t}` in {what} must be a table `[{prefix}{t}]`", t)
    if diags:
        raise RulekitError(sorted(diags, key=Diagnostic.sort_key))
    return Project(path, rules, bundled, examples, analysis or None,
                   (path.parent / store).resolve() if isinstance(store, str) else None)


def load_project(start: str | Path | None = None) -> Project | None:
    """The project file found from `start` upward, read; None when there is none."""
    f = find_project_file(start)
    return read_project(f) if f is not None else None


@dataclass(frozen=True)
class CorpusChoice:
    """Which rule paths a face loads, and which of them are the user's own."""

    paths: tuple[Path, ...]  # what the loader reads, in order: the bundled rules first
    own: tuple[Path, ...]  # the user's rule paths (reported on); empty: the bundled corpus alone
    bundled: bool  # the bundled corpus is among `paths`
    project: Project | None = None

    @property
    def load_paths(self) -> list[str]:
        return [str(p) for p in self.paths]

    @property
    def report_paths(self) -> tuple[Path, ...]:
        """The paths whose files are reported on: the user's own, else the bundled rules."""
        return self.own or self.paths

    def owns(self, file: str | Path) -> bool:
        """Is `file` one of the files reported on (in a reported folder, or a reported file)?"""
        f = Path(file).resolve()
        for p in self.report_paths:
            r = p.resolve()
            if f == r or r in f.parents:
                return True
        return False

    def describe(self) -> str:
        parts = (["the bundled rules"] if self.bundled else []) + [_short(p) for p in self.own]
        src = f" (from {_short(self.project.file)})" if self.project is not None and self.own else ""
        return " + ".join(parts) + src


def _short(p: Path) -> str:
    try:
        return os.path.relpath(p)
    except ValueError:  # another drive
        return str(p)


class NoRules(ValueError):
    """`--no-bundled` (or `bundled = false`) with no rule folder to load instead."""


def choose_corpus(paths: Sequence[str | Path] | None = None, *, bundled: bool | None = None,
                  project: Project | None = None, find: bool = True,
                  start: str | Path | None = None) -> CorpusChoice:
    """The corpus a face loads.

    paths: rule folders or files the user named (the command line, a Service or Blueprint
    setting); when empty, the project file's `rules`.  bundled: True / False from the
    command line, None to follow the project file (default: loaded).  project: an already
    read project file; else, with `find`, the one found from `start` (default: the current
    folder) upward.  The bundled folder is never loaded twice (naming it is naming the
    bundled corpus).  RulekitError (RK008) for a bad project file; NoRules when nothing
    is left to load."""
    from rulekit.rules.loader import bundled_rules_path

    if project is None and find:
        project = load_project(start)
    # paths stay as written (messages and spans show them so); compared resolved
    named = [Path(p) for p in paths] if paths else [_near(p) for p in (project.rules if project else ())]
    use_bundled = bundled if bundled is not None else (project.bundled if project and project.bundled is not None
                                                       else True)
    home = bundled_rules_path()
    home_r = home.resolve()
    own: list[Path] = []
    seen: set[Path] = set()
    for p in named:
        r = p.resolve()
        if r == home_r:  # naming the bundled folder is naming the bundled corpus
            use_bundled = True
        elif r not in seen:
            seen.add(r)
            own.append(p)
    if not use_bundled and not own:
        raise NoRules("--no-bundled leaves no rules to load: name rule folders (or `rules` in the project file)")
    chosen = ([home] if use_bundled else []) + own
    return CorpusChoice(tuple(chosen), tuple(own), use_bundled, project)


def _near(p: Path) -> Path:
    """A project path relative to the current folder when it is under it (how users name paths)."""
    try:
        return p.relative_to(Path.cwd())
    except ValueError:
        return p


def example_paths(choice: CorpusChoice, explicit: Iterable[str | Path] | None = None) -> list[Path]:
    """Example job folders to run: the explicit ones, else the project file's, else
    `examples/` beside each reported rule folder's parent (a repository's layout)."""
    if explicit is not None:
        return [Path(p) for p in explicit]
    if choice.project is not None and choice.project.examples and choice.own:
        return list(choice.project.examples)
    return examples_beside(choice.report_paths)


def examples_beside(rule_paths: Iterable[str | Path]) -> list[Path]:
    """`examples/` beside each rules folder's parent (a repository's layout), when it exists."""
    out: list[Path] = []
    for p in rule_paths or ():
        p = Path(p)
        folder = p if p.is_dir() else p.parent
        cand = folder.resolve().parent / "examples"
        if cand.is_dir() and cand not in out:
            out.append(cand)
    return out
