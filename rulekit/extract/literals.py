"""Required literals of a rule regex, and the choice of each rule's prefilter key.

A rule's *factors* are what every match must contain: AND across factors, OR
within one factor.  They come from walking the pattern's parse tree (Python's own
`re._parser`): contiguous literals form a run (`\\b`, `^`, `$` do not break it),
small finite sub-languages (`(?:failed|failure)`, `s?`, `[Uu]`, `x{3}`) are
expanded into the run up to 32 strings, a required group contributes its own
factors, a branch gives the OR of each alternative's best factor, anything else
(classes, `.`, optional parts) breaks the run.

Keys are bytes, UTF-8 encoded and ASCII-lower-cased (the same `bytes.lower()` the
scanner applies to a line), at least 3 bytes long.  Under `(?i)` the letters `k`
and `s` also get the spellings RE2 folds them with (KELVIN SIGN, LONG S), and a
non-ASCII cased letter breaks the run, so a key is never missed on a line the
rule matches.

`choose_keys` picks, per rule, the factor rarest in a benign sample (not the
longest).  Pure functions over strings and bytes; no I/O, no scanning of logs.
"""
from __future__ import annotations

import bisect
import re
import re._parser as sre_parse  # type: ignore[import-not-found]
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import ahocorasick_rs

MIN_KEY = 3
MAX_KEY = 64  # bytes of a key: a prefix of a required literal is required too, and the automata
# built from the keys cost time that grows faster than their length (a 20,000-character literal: 11 s)
MAX_EXPANSION = 32

_c = sre_parse  # constants live in the parser module's namespace
LITERAL, NOT_LITERAL, IN, ANY = _c.LITERAL, _c.NOT_LITERAL, _c.IN, _c.ANY
BRANCH, SUBPATTERN, AT = _c.BRANCH, _c.SUBPATTERN, _c.AT
MAX_REPEAT, MIN_REPEAT = _c.MAX_REPEAT, _c.MIN_REPEAT
RANGE, NEGATE, CATEGORY = _c.RANGE, _c.NEGATE, _c.CATEGORY

# ASCII letters whose RE2 case-folding orbit leaves ASCII
_FOLD_EXTRA = {"k": ("\u212a",), "s": ("\u017f",)}

Factor = frozenset  # of bytes: OR of alternatives


def ascii_fold_partners(ch: str) -> str:
    """ASCII letters RE2's `(?i)` equates with the non-ASCII `ch` (e.g. LONG S -> "sS")."""
    return "".join(a for a in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   if a.upper() == ch.upper() or a.lower() == ch.lower())


def key_bytes(text: str) -> bytes:
    """The scanner's view of a literal: UTF-8, ASCII-lower-cased."""
    return text.encode("utf-8").lower()


@lru_cache(maxsize=4096)
def parse(pattern: str):
    """Python's parse tree of `pattern`, or None when Python cannot parse it
    (RE2-only syntax such as `\\pL`) or would read it differently from RE2
    (`[[:alpha:]]`, `x{,3}`)."""
    from rulekit.extract.regex import python_divergence, python_parse

    if python_divergence(pattern) is not None:
        return None
    return python_parse(pattern)


class _Walker:
    """Computes (language, factors) of parse-tree sequences.

    language: frozenset of exact strings (lower-cased keys as bytes) when the
    sequence denotes a small finite set of literal strings, else None.
    factors: list of Factor (each a frozenset of keys, all >= MIN_KEY bytes)."""

    def seq(self, items, icase: bool):
        factors: list[Factor] = []
        run: set[bytes] | None = {b""}
        # single-string items not yet appended to each string of `run`: joined once, so a long
        # literal costs its length, not its length squared
        tail: list[bytes] = []
        broken = False

        def flush() -> None:
            nonlocal run
            if tail:
                joined = b"".join(tail)
                tail.clear()
                if run is not None:
                    run = {a + joined for a in run}

        for op, av in items:
            lang = self.item_language(op, av, icase)
            if lang is not None and run is not None and len(lang) == 1:
                tail.extend(lang)
                continue
            flush()
            if lang is not None:
                prod = {a + b for a in run for b in lang} if run is not None else None
                if prod is not None and len(prod) <= MAX_EXPANSION:
                    run = prod
                    continue
                # too big: close the run, start a new one from this item
                self._close(run, factors)
                broken = True
                run = set(lang) if len(lang) <= MAX_EXPANSION else None
                continue
            if op is AT:
                continue  # anchors and word boundaries do not break a run
            self._close(run, factors)
            broken = True
            run = {b""}
            factors.extend(self.item_factors(op, av, icase))
        flush()
        whole = frozenset(run) if run is not None and not broken else None
        self._close(run, factors)
        return whole, factors

    @staticmethod
    def _close(run, factors):
        if run and all(len(s) >= MIN_KEY for s in run):
            factors.append(_cut(run))

    def item_language(self, op, av, icase):
        """Finite language of one item, or None."""
        if op is LITERAL:
            return _char_lang(av, icase)
        if op is IN:
            out: set[bytes] = set()
            for sop, sav in av:
                if sop is LITERAL:
                    cl = _char_lang(sav, icase)
                    if cl is None:
                        return None
                    out |= cl
                elif sop is RANGE:
                    lo, hi = sav
                    if hi - lo > MAX_EXPANSION:
                        return None
                    for c in range(lo, hi + 1):
                        cl = _char_lang(c, icase)
                        if cl is None:
                            return None
                        out |= cl
                else:
                    return None
                if len(out) > MAX_EXPANSION:
                    return None
            return frozenset(out)
        if op is SUBPATTERN:
            _group, add, dele, p = av
            lang, _ = self.seq(p, _flag(icase, add, dele))
            return lang
        if op is BRANCH:
            out = set()
            for alt in av[1]:
                lang, _ = self.seq(alt, icase)
                if lang is None:
                    return None
                out |= lang
                if len(out) > MAX_EXPANSION:
                    return None
            return frozenset(out)
        if op in (MAX_REPEAT, MIN_REPEAT):
            lo, hi, p = av
            if hi is sre_parse.MAXREPEAT or hi > 4:
                return None
            lang, _ = self.seq(p, icase)
            if lang is None:
                return None
            acc: set[bytes] = {b""}
            total: set[bytes] = set(acc) if lo == 0 else set()
            for k in range(1, hi + 1):
                acc = {a + b for a in acc for b in lang}
                if len(acc) > MAX_EXPANSION:
                    return None
                if k >= lo:
                    total |= acc
            return frozenset(total) if len(total) <= MAX_EXPANSION else None
        return None

    def item_factors(self, op, av, icase) -> list[Factor]:
        if op is SUBPATTERN:
            _group, add, dele, p = av
            return self.seq(p, _flag(icase, add, dele))[1]
        if op is BRANCH:
            best: set[bytes] = set()
            for alt in av[1]:
                lang, fs = self.seq(alt, icase)
                if lang is not None and all(len(s) >= MIN_KEY for s in lang) and lang:
                    fs = fs + [_cut(lang)]
                if not fs:
                    return []
                best |= max(fs, key=lambda f: (min(len(s) for s in f), -len(f)))
            return [frozenset(best)] if len(best) <= 4 * MAX_EXPANSION else []
        if op in (MAX_REPEAT, MIN_REPEAT):
            lo, _hi, p = av
            if lo >= 1:
                lang, fs = self.seq(p, icase)
                if lang is not None:
                    self._close(set(lang), fs)
                return fs
            return []
        return []


def _cut(keys) -> Factor:
    """A factor with each key cut to its first MAX_KEY bytes (still required of every match)."""
    return frozenset(k[:MAX_KEY] for k in keys)


def _flag(icase: bool, add: int, dele: int) -> bool:
    if add & re.IGNORECASE:
        return True
    if dele & re.IGNORECASE:
        return False
    return icase


def _char_lang(code: int, icase: bool) -> frozenset[bytes] | None:
    ch = chr(code)
    if code == 0xFFFD:
        return None  # U+FFFD on a decoded line may stand for any invalid bytes
    if not icase:
        return frozenset({key_bytes(ch)})
    if code < 128:
        low = ch.lower()
        return frozenset({key_bytes(low), *(key_bytes(x) for x in _FOLD_EXTRA.get(low, ()))})
    if ch.lower() == ch.upper():  # uncased symbol, e.g. "→"
        return frozenset({key_bytes(ch)})
    return None  # non-ASCII cased letter under (?i): RE2's fold orbit is not ours to guess


@lru_cache(maxsize=4096)
def factors_of(pattern: str) -> tuple[Factor, ...] | None:
    """Required factors of `pattern` (possibly empty), or None if Python cannot parse it."""
    tree = parse(pattern)
    if tree is None:
        return None
    icase = bool(tree.state.flags & re.IGNORECASE)
    lang, factors = _Walker().seq(list(tree), icase)
    if lang is not None:
        _Walker._close(set(lang), factors)
    # de-duplicate, keep order
    seen, out = set(), []
    for f in factors:
        if f not in seen:
            seen.add(f)
            out.append(f)
    return tuple(out)


@dataclass(frozen=True)
class KeyChoice:
    factor: Factor | None  # the chosen OR-set of keys, None: no usable factor
    sample_hits: int  # occurrences of the factor's keys in the sample
    sample_lines: int  # lines in the sample (0: no sample)

    @property
    def rate(self) -> float:
        return self.sample_hits / self.sample_lines if self.sample_lines else 0.0


def sample_key_counts(keys: Sequence[bytes], sample: bytes | None) -> dict[bytes, int]:
    """How many lines of `sample` contain each key (after ASCII lower-casing)."""
    counts = {k: 0 for k in keys}
    if not sample or not keys:
        return counts
    keys = list(dict.fromkeys(keys))
    ac = ahocorasick_rs.BytesAhoCorasick(keys, implementation=ahocorasick_rs.Implementation.DFA)
    low, nl_positions = _lowered(sample)
    # count per line: a key occurring twice on one line counts once
    per_key_lines: dict[int, set[int]] = {}
    for kid, start, _end in ac.find_matches_as_indexes(low, overlapping=True):
        per_key_lines.setdefault(kid, set()).add(bisect.bisect_right(nl_positions, start))
    for kid, lines in per_key_lines.items():
        counts[keys[kid]] = len(lines)
    return counts


@lru_cache(maxsize=4)
def _lowered(sample: bytes) -> tuple[bytes, list[int]]:
    """The sample lower-cased and its newline offsets: the same sample is counted for
    every accelerator built (one per inline test's rules in an editor)."""
    low = sample.lower()
    return low, _newline_index(low)


def _newline_index(data: bytes) -> list[int]:
    out, pos = [], data.find(b"\n")
    while pos >= 0:
        out.append(pos)
        pos = data.find(b"\n", pos + 1)
    return out


def count_lines(sample: bytes | None) -> int:
    if not sample:
        return 0
    return sample.count(b"\n") + (0 if sample.endswith(b"\n") else 1)


def choose_keys(all_factors: Sequence[Sequence[Factor] | None], sample: bytes | None,
                counts: dict[bytes, int] | None = None) -> list[KeyChoice]:
    """Per rule, the factor whose keys occur on the fewest sample lines; ties go to
    the factor shared by fewer rules, then to the longer one.  Without a sample,
    the factor with the longest shortest key.  `counts`: each key's
    `sample_key_counts` on this sample, when the caller has them already."""
    if counts is None:
        keys = sorted({k for fs in all_factors if fs for f in fs for k in f})
        counts = sample_key_counts(keys, sample)
    share: dict[bytes, int] = {}
    for fs in all_factors:
        for k in {k for f in fs or () for k in f}:
            share[k] = share.get(k, 0) + 1
    nlines = count_lines(sample)
    out = []
    for fs in all_factors:
        if not fs:
            out.append(KeyChoice(None, 0, nlines))
            continue
        def score(f):
            return (sum(counts[k] for k in f), max(share[k] for k in f), -min(len(k) for k in f), len(f))
        best = min(fs, key=score)
        out.append(KeyChoice(best, sum(counts[k] for k in best), nlines))
    return out
