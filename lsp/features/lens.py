"""Code lens: "Run tests" on each rule with inline tests (and once per file), plus
the last result ("3/3 passed", "1 failed").  Pure: no LSP types.
"""
from __future__ import annotations

from rulekit.diagnostics import Span
from rulekit_lsp.features import Lens
from rulekit_lsp.workspace import Corpus

RUN_TESTS = "rulekit.runTests"
RUN_ALL_TESTS = "rulekit.runAllTests"


def result_title(summary: tuple[int, int, int] | None) -> str | None:
    if summary is None:
        return None
    passed, failed, total = summary
    return f"{passed}/{total} passed" if not failed else f"{failed} failed ({passed}/{total} passed)"


def code_lenses(corpus: Corpus, path: str, uri: str) -> list[Lens]:
    st = corpus.files.get(path)
    if st is None:
        return []
    out: list[Lens] = []
    groups: dict[tuple[int, int], list] = {}
    for r in st.ruleset.rules:
        if getattr(r, "tests", ()) and r.span is not None and r.span.file == path:
            groups.setdefault((r.span.line, r.span.col), []).append(r)
    names_in_file: list[str] = []
    for (line, col), rules in sorted(groups.items()):
        span = Span(path, line, col, line, col)
        label = rules[0].origin.split(":", 1)[1].split("[")[0] if getattr(rules[0], "origin", None) else rules[0].name
        names = [r.name for r in rules]
        names_in_file += names
        n = sum(len(r.tests) for r in rules)
        out.append(Lens(span, f"▶ Run {n} test{'s' if n != 1 else ''}", RUN_TESTS, ({"uri": uri, "rule": label},)))
        title = result_title(corpus.test_summary(names))
        if title:
            out.append(Lens(span, title, RUN_TESTS, ({"uri": uri, "rule": label},)))
    cases = [c for c in st.ruleset.job_tests if c.span is not None and c.span.file == path]
    for c in cases:
        span = Span(path, c.span.line, c.span.col, c.span.line, c.span.col)
        title = result_title(corpus.test_summary([c.name]))
        if title:
            out.append(Lens(span, title, RUN_TESTS, ({"uri": uri},)))
    if names_in_file or cases:
        total = result_title(corpus.test_summary(names_in_file + [c.name for c in cases]))
        head = Span(path, 1, 1, 1, 1)
        out.insert(0, Lens(head, "▶ Run all tests in file" + (f" — {total}" if total else ""), RUN_TESTS,
                           ({"uri": uri},)))
    return out
