"""Incremental parse of a TOML rule file, one top-level table at a time.

An edit usually touches one `[[extractor]]` (or symptom, catalog ...) of a file
that holds hundreds.  `ChunkedToml.parse(text)` splits the file at its top-level
array-of-tables headers, parses each table with the loader's own
`toml_frontend.parse_rules` on a text made of the file's preamble (the keys
before the first header, e.g. `author`) and the table itself, read as if blank
lines stood between them up to the table (`blank=`: so every span keeps its
line, without a padded text to scan: linear in the file, not quadratic), and reuses the result of each table
whose text and preamble did not change.  The pieces are merged in the order
`parse_rules` produces (symptoms, outcome rules, then extractors, families,
catalogs, metric rules, each in file order; a catalog's own symptoms after every
plain symptom, wherever the catalog stands).

Exactness comes first: a file whose shape the split cannot reproduce (a plain
`[table]`, an unknown or misplaced header, nothing but a preamble) and a file in
which any table has a diagnostic are parsed whole, so what the editor shows is
always what `parse_rules(text)` says (tested against it on every bundled and
fixture file).

Must not: parse TOML itself, hold LSP types, read files.
"""
from __future__ import annotations

import tomllib

from rulekit.diagnostics import Diagnostic
from rulekit.rules.model import RuleSet
from rulekit.rules.toml_frontend import Locator, parse_rules

# the top-level tables, in the order parse_rules emits their results
SECTIONS = ("symptom", "outcome_rule", "extractor", "family", "catalog", "metric_rule")
_RULE_ORDER = {"extractor": 0, "family": 1, "catalog": 2, "metric_rule": 3}


def split(text: str, path: str) -> tuple[str, list[tuple[str, int, str]]] | None:
    """(preamble, [(section, first line, table text)]) or None when the file must be parsed whole."""
    loc = Locator(text, path)
    if not loc.headers:
        return None
    lines = text.split("\n")
    chunks: list[tuple[str, int, str]] = []
    starts: list[tuple[str, int]] = []
    current = None
    for line, name, is_array in loc.headers:
        if "." not in name:
            if not is_array or name not in SECTIONS:
                return None
            current = name
            starts.append((name, line))
        elif current is None or not name.startswith(current + "."):
            return None
    first = starts[0][1]
    preamble = "\n".join(lines[: first - 1])
    if not _plain_preamble(preamble):
        return None
    for i, (name, line) in enumerate(starts):
        end = starts[i + 1][1] - 1 if i + 1 < len(starts) else len(lines)
        chunks.append((name, line, "\n".join(lines[line - 1: end])))
    return preamble, chunks


def _plain_preamble(preamble: str, _seen: dict[str, bool] = {}) -> bool:  # noqa: B006 - a memo by text
    """The preamble holds no table of its own (`extractor = [{...}]` inline, `symptom.x = 1`):
    it is copied into every piece, so a table there would be parsed once per piece."""
    got = _seen.get(preamble)
    if got is None:
        try:
            got = not (set(tomllib.loads(preamble)) & set(SECTIONS))
        except tomllib.TOMLDecodeError:
            got = False
        if len(_seen) > 64:
            _seen.clear()
        _seen[preamble] = got
    return got


class ChunkedToml:
    """The parse of one TOML rule file across edits (one per open file)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._memo: dict[tuple[str, int, str], tuple[RuleSet, list[Diagnostic]]] = {}
        self.reused = 0  # tables whose parse was reused by the last call (for tests and the bench)

    def parse(self, text: str) -> tuple[RuleSet, list[Diagnostic]]:
        got = split(text, self.path)
        if got is None:
            self._memo = {}
            return parse_rules(text, self.path)
        preamble, chunks = got
        memo: dict[tuple[str, int, str], tuple[RuleSet, list[Diagnostic]]] = {}
        parts: list[tuple[str, RuleSet]] = []
        self.reused = 0
        pre_lines = preamble.count("\n") + 1 if preamble else 0
        for name, line, body in chunks:
            key = (preamble, line, body)
            res = self._memo.get(key)
            if res is None:
                # read at its line in the file: as if empty lines stood between the preamble and it
                res = parse_rules((preamble + "\n" if preamble else "") + body, self.path,
                                  blank=(pre_lines, line - 1 - pre_lines))
            else:
                self.reused += 1
            memo[key] = res
            if res[1]:  # a diagnostic: the whole file's parse decides (messages, order, follow-ons)
                self._memo = memo
                return parse_rules(text, self.path)
            parts.append((name, res[0]))
        self._memo = memo  # only the current tables: the memo never outgrows the file
        out = RuleSet(files=[self.path])
        # parse_rules gives the plain [[symptom]] tables' symptoms first, then the catalogs'
        # (their entries' symptoms): by kind, in file order within a kind (a stable sort)
        for _, rs in sorted(parts, key=lambda p: SECTIONS.index(p[0])):
            out.symptoms.extend(rs.symptoms)
            out.outcome_rules.extend(rs.outcome_rules)
            out.job_tests.extend(rs.job_tests)
        for _, rs in sorted(parts, key=lambda p: _RULE_ORDER.get(p[0], -1)):  # stable: file order within a kind
            out.rules.extend(rs.rules)
        return out, []
