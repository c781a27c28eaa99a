"""pytest plugin: a project that uses rulekit gets its corpus's test cases as
pytest items, one per inline test line, `*.test.toml` case and example job.

Off unless asked, so it never collects anything in a test run that did not opt
in: enable it with `pytest --rulekit` (rule paths from `--rulekit-path`, the ini
option `rulekit_paths`, or the bundled rules) or by setting `rulekit_paths` in
the ini file.  Example jobs come from `rulekit_examples` / `--rulekit-examples`,
or `examples/` beside the rules folder's parent.  A corpus that does not load is
one failing item carrying its diagnostics.  The cases themselves run through
`rulekit.analysis.testrun`, exactly as `rulekit test` runs them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rulekit", "rulekit rule corpus tests")
    group.addoption("--rulekit", action="store_true", default=False,
                    help="collect the rulekit corpus's test cases as test items")
    group.addoption("--rulekit-path", action="append", default=[], metavar="PATH",
                    help="rule folder or file (repeatable; default: ini rulekit_paths or the bundled rules)")
    group.addoption("--rulekit-examples", action="append", default=[], metavar="DIR",
                    help="example job folders (repeatable)")
    parser.addini("rulekit_paths", "rule folders whose test cases pytest collects (enables the plugin)",
                  type="paths", default=[])
    parser.addini("rulekit_examples", "example job folders for the rulekit plugin", type="paths", default=[])


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("rulekit") or config.getoption("rulekit_path") or config.getini("rulekit_paths"))


def _paths(config: pytest.Config) -> list[Path]:
    given = [Path(p) for p in config.getoption("rulekit_path")]
    if not given:
        given = [Path(p) for p in config.getini("rulekit_paths")]
    if not given:
        from rulekit.rules.loader import bundled_rules_path

        given = [bundled_rules_path()]
    return [p if p.is_absolute() else Path(config.rootpath) / p for p in given]


class RulekitError(Exception):
    """A failed rulekit case; carries the lines that describe it."""


class RulekitCorpus(pytest.File):
    """The corpus: loads it once and yields one item per test case."""

    rule_paths: list[Path]
    example_paths: list[Path]

    def collect(self):
        from rulekit.analysis.testrun import collect
        from rulekit.diagnostics import Severity
        from rulekit.rules.loader import load_corpus

        res = load_corpus(self.rule_paths)
        if res.engine is None:
            from rulekit.cli.render import format_text

            errors = [d for d in res.diagnostics if d.severity is Severity.ERROR]
            yield RulekitLoadItem.from_parent(self, name="load", text=format_text(errors, res.texts))
            return
        engine = res.engine
        for item in collect(res.engine, self.example_paths):
            yield RulekitItem.from_parent(self, name=item.nodeid, engine=engine, case=item)


class RulekitLoadItem(pytest.Item):
    def __init__(self, *, text: str, **kw: Any):
        super().__init__(**kw)
        self.text = text
        self.funcargs: dict[str, Any] = {}

    def runtest(self) -> None:
        raise RulekitError(["the rule corpus does not load:", self.text])

    def repr_failure(self, excinfo, style=None):  # type: ignore[override]
        if isinstance(excinfo.value, RulekitError):
            return "\n".join(excinfo.value.args[0])
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, "rulekit corpus"


class RulekitItem(pytest.Item):
    def __init__(self, *, engine: Any, case: Any, **kw: Any):
        super().__init__(**kw)
        self.engine = engine
        self.case = case
        self.funcargs: dict[str, Any] = {}  # some plugins' runtest wrappers (pytest-lsp) expect it
        self.user_properties.append(("rulekit_kind", case.kind))

    def runtest(self) -> None:
        from rulekit.analysis.testrun import describe, run_item

        result = run_item(self.engine, self.case)
        if not result.passed:
            where = f"{self.case.file}:{self.case.line}" if self.case.file else "?"
            raise RulekitError([f"{result.kind} test `{result.name}` at {where}", *describe(result)])

    def repr_failure(self, excinfo, style=None):  # type: ignore[override]
        if isinstance(excinfo.value, RulekitError):
            return "\n".join(excinfo.value.args[0])
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return Path(self.case.file or self.path), (self.case.line or 1) - 1, f"rulekit {self.case.kind}: {self.case.name}"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    if not _enabled(config):
        return
    rule_paths = _paths(config)
    ex = [Path(p) for p in config.getoption("rulekit_examples")] or [Path(p) for p in config.getini("rulekit_examples")]
    if not ex:
        from rulekit.analysis.testrun import default_example_paths

        ex = default_example_paths(rule_paths)
    anchor = rule_paths[0]
    corpus = RulekitCorpus.from_parent(session, path=anchor if anchor.is_file() else anchor / "rulekit-corpus")
    corpus.rule_paths = rule_paths
    corpus.example_paths = ex
    items.extend(corpus.collect())
