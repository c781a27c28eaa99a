""""Did you mean": the nearest known names to a misspelt one, by edit distance
(Damerau-Levenshtein, optimal string alignment: a swap of two neighbours is one
edit), case-insensitive.  Used by the messages about unknown symptoms, rule
names and keys.  Pure; knows nothing of rules.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Iterable


@lru_cache(maxsize=16384)
def _letters(s: str) -> tuple[frozenset, Counter]:
    return frozenset(s), Counter(s)


def bag_bound(a: str, b: str, limit: int) -> int:
    """A lower bound of `distance(a, b)` from the letters alone (each edit adds, removes or
    changes at most one letter of each word's multiset; a swap changes none): first the
    letters one word has and the other lacks, then, when that is not above `limit`, the
    multisets' difference."""
    (sa, ba), (sb, bb) = _letters(a), _letters(b)
    d = max(len(sa - sb), len(sb - sa))
    if d > limit:
        return d
    return max(sum((ba - bb).values()), sum((bb - ba).values()))


def distance(a: str, b: str, limit: int | None = None) -> int:
    """Edits (insert, delete, replace, swap two neighbours) that turn `a` into `b`; with
    `limit`, any answer above it may come back as `limit + 1` (early exit)."""
    if a == b:
        return 0
    if limit is not None and abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        # every later cell is at least this row's minimum, or the row before's plus one (a swap)
        if limit is not None and min(cur) > limit and min(prev) >= limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def closest(word: str, candidates: Iterable[str], most: int = 3) -> list[str]:
    """The candidates nearest to `word` (at most `most`, all at the smallest distance),
    when that distance is small for the word's length (a third of it, at least 1, at
    most 4); none otherwise.  A candidate that differs only in case comes first."""
    if not word:
        return []
    low = word.lower()
    limit = max(1, min(4, len(word) // 3))
    best: list[str] = []
    best_d = limit + 1
    for c in dict.fromkeys(candidates):
        if c == word:
            continue
        cl = c.lower()
        if abs(len(cl) - len(low)) > best_d or bag_bound(low, cl, best_d) > best_d:
            continue  # cannot be nearer than the best so far (the exact distance costs |a|*|b|)
        d = distance(low, cl, best_d)
        if d < best_d:
            best, best_d = [c], d
        elif d == best_d and d <= limit:
            best.append(c)
    return sorted(best, key=lambda c: (c.lower() != low, c))[:most] if best_d <= limit else []


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """` (did you mean `X`?)`, ` (did you mean `X` or `Y`?)`, or "" when nothing is close."""
    got = closest(word, candidates)
    if not got:
        return ""
    return " (did you mean " + " or ".join(f"`{c}`" for c in got) + "?)"
