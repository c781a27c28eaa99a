"""The lint's view of the acceleration structure, computed per pattern so that a
re-lint after an edit redoes only what the edit changed.

* `analyses`: each pattern's required literals, chosen key and gate form, as
  `rulekit.extract.accel.Accelerator.analysis` reports them (the same functions:
  `literals.factors_of`, `literals.choose_keys`, `superset.superset_of`), without
  compiling an acceleration structure.  Factors, supersets and each key's count
  on the sample are memoized per pattern / key; the choice itself (which depends
  on how many patterns share a key) is made again, over all, each time.
* `sample_hits`: each pattern's lines of the benign sample (memoized per pattern
  and sample).
* `LineHits`: which of the corpus's own test lines each pattern matches, kept
  across lints: new lines are scanned by every pattern, new patterns scan every
  line, nothing else is scanned again.

Line semantics are the scanner's (`Accelerator.scan`): lines split on `\\n`, a
trailing `\\r` removed.  Memo tables are plain dicts the caller owns (the lint
memo).  No I/O.
"""
from __future__ import annotations

import bisect
import hashlib
from typing import Any, MutableMapping, Sequence

from rulekit.extract import literals as L

Table = MutableMapping[Any, Any]


def analyses(patterns: Sequence[str], sample: bytes, factors_memo: Table, superset_memo: Table,
             count_memo: Table) -> list:
    """`PatternAnalysis` per pattern, equal to `Accelerator(patterns, sample).analysis`
    but for `engine` (always "re2": lint does not read it) and `broad_rate` (None)."""
    from rulekit.extract.accel import pattern_analyses
    from rulekit.extract.superset import superset_of

    all_factors = []
    for p in patterns:
        got = factors_memo.get(p, _MISSING)
        if got is _MISSING:
            got = factors_memo[p] = L.factors_of(p)
        all_factors.append(got)
    digest = hashlib.sha1(sample).digest()
    keys = sorted({k for fs in all_factors if fs for f in fs for k in f})
    missing = [k for k in keys if (k, digest) not in count_memo]
    if missing:
        for k, n in L.sample_key_counts(missing, sample).items():
            count_memo[(k, digest)] = n
    counts = {k: count_memo[(k, digest)] for k in keys}
    choices = L.choose_keys(all_factors, sample, counts=counts)
    supersets = []
    for p, ch in zip(patterns, choices):
        key = (p, ch.factor)
        got = superset_memo.get(key, _MISSING)
        if got is _MISSING:
            got = superset_memo[key] = superset_of(p, ch.factor)
        supersets.append(got)
    return pattern_analyses(patterns, all_factors, choices, supersets)


_MISSING = object()


def sample_hits(patterns: Sequence[str], sample: bytes, memo: Table,
                accelerator: Any = None) -> list[tuple[tuple[int, int], ...]]:
    """Per pattern, the (start, end) of each sample line it matches.  Patterns not in
    the memo are scanned by `accelerator` when every one is missing (the corpus's
    own, when the caller has it), else by one over just them."""
    digest = hashlib.sha1(sample).digest()
    missing = [i for i, p in enumerate(patterns) if (p, digest) not in memo]
    if missing:
        from rulekit.extract.accel import Accelerator

        if len(missing) == len(patterns) and accelerator is not None:
            sub, idx = accelerator, list(range(len(patterns)))
        else:
            sub, idx = Accelerator([patterns[i] for i in missing], sample=sample), missing
        found: dict[int, list[tuple[int, int]]] = {i: [] for i in idx}
        for start, end, k, _caps in sub.scan(sample):
            found[idx[k]].append((start, end))
        for i in idx:
            memo[(patterns[i], digest)] = tuple(found[i])
    return [memo[(p, digest)] for p in patterns]


class LineHits:
    """Which test lines each pattern matches, grown across lints (see the module
    docstring).  A line is kept as the lint sees it: newlines inside replaced by
    spaces; its text as a witness has a trailing `\\r` removed."""

    REBUILD = 200  # patterns added since the big accelerator was built before it is rebuilt

    def __init__(self) -> None:
        self.lines: dict[str, str] = {}  # line -> its witness text
        self.patterns: set[str] = set()
        self.hits: dict[str, set[str]] = {}  # pattern -> lines it matches
        self._big: Any = None  # an accelerator over most of `patterns`
        self._extra_pats: list[str] = []  # patterns scanned since it was built (not in it)

    def update(self, patterns: Sequence[str], lines: Sequence[str], sample: bytes,
               make_big: Any = None) -> None:
        """Scan what is new.  `make_big()`: an accelerator over `patterns` (shared with
        the caller's own scan), used when every pattern is new."""
        new_pats = [p for p in dict.fromkeys(patterns) if p not in self.patterns]
        new_lines = [ln for ln in dict.fromkeys(lines) if ln not in self.lines]
        if new_lines:
            self._scan_lines(new_lines, sample)
        if new_pats:
            self._scan_patterns(new_pats, list(self.lines), sample,
                                make_big if len(new_pats) == len(set(patterns)) else None)

    def _scan_lines(self, lines: list[str], sample: bytes) -> None:
        """New lines through every pattern seen so far."""
        from rulekit.extract.accel import Accelerator

        for ln in lines:
            self.lines[ln] = ""
        if not self.patterns:
            self._texts(lines)
            return
        if self._big is None or len(self._extra_pats) > self.REBUILD:
            self._big = Accelerator(sorted(self.patterns), sample=sample)
            self._extra_pats = []
        self._scan(self._big, lines)
        if self._extra_pats:
            self._scan(Accelerator(self._extra_pats, sample=sample), lines)

    def _scan_patterns(self, patterns: list[str], lines: list[str], sample: bytes, make_big: Any) -> None:
        """New patterns through every line seen so far."""
        from rulekit.extract.accel import Accelerator

        first = not self.patterns
        for p in patterns:
            self.patterns.add(p)
            self.hits.setdefault(p, set())
        if not first and self._big is not None:
            self._extra_pats.extend(patterns)
        if not lines:
            return
        if first:
            self._big = make_big() if make_big is not None else Accelerator(patterns, sample=sample)
            self._extra_pats = []
            self._scan(self._big, lines)
        else:
            self._scan(Accelerator(patterns, sample=sample), lines)

    def _blob(self, lines: list[str]) -> tuple[bytes, list[int]]:
        data = "".join(ln + "\n" for ln in lines).encode("utf-8")
        starts, pos = [], 0
        for ln in lines:
            starts.append(pos)
            pos += len(ln.encode("utf-8")) + 1
        return data, starts

    def _texts(self, lines: list[str]) -> None:
        for ln in lines:
            self.lines[ln] = ln.rstrip("\r")

    def _scan(self, acc: Any, lines: list[str]) -> None:
        data, starts = self._blob(lines)
        patterns = acc.patterns
        for start, end, k, _caps in acc.scan(data):
            ln = lines[bisect.bisect_right(starts, start) - 1]
            if not self.lines[ln]:
                self.lines[ln] = data[start:end].rstrip(b"\r").decode("utf-8", "replace")
            self.hits[patterns[k]].add(ln)
        self._texts([ln for ln in lines if not self.lines[ln]])

    def size(self) -> int:
        return len(self.patterns) + len(self.lines)
