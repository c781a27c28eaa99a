"""`closest` prunes candidates by length and letters before the edit distance (the corpus
check asks it for every unknown symptom of an edited catalog, against every registered
name); the pruning is exact: the same answers as the full distance over every candidate,
on misspellings of the bundled symptom names."""
from __future__ import annotations

import random

from rulekit.rules import suggest


def _plain(word: str, candidates: list[str], most: int = 3) -> list[str]:
    low = word.lower()
    limit = max(1, min(4, len(word) // 3))
    best: list[str] = []
    best_d = limit + 1
    for c in dict.fromkeys(candidates):
        if c == word:
            continue
        d = suggest.distance(low, c.lower())
        if d < best_d:
            best, best_d = [c], d
        elif d == best_d and d <= limit:
            best.append(c)
    return sorted(best, key=lambda c: (c.lower() != low, c))[:most] if best_d <= limit else []


def test_pruned_closest_gives_the_full_answers(bundled):
    names = sorted(bundled.registry.names())[::4]  # ~150 names: the full distance is slow
    rng = random.Random(7)
    found = 0
    for _ in range(120):
        w = list(rng.choice(names))
        for _ in range(rng.randint(0, 4)):
            op, i = rng.randint(0, 3), rng.randrange(len(w))
            if op == 0:
                w.insert(i, rng.choice("ABCXYZ_019"))
            elif op == 1 and len(w) > 2:
                del w[i]
            elif op == 2:
                w[i] = rng.choice("ABCXYZ_019")
            elif i + 1 < len(w):
                w[i], w[i + 1] = w[i + 1], w[i]
        word = "".join(w)
        want = _plain(word, names)
        assert suggest.closest(word, names) == want, word
        found += bool(want)
    assert found > 30  # most misspellings still find their name


def test_the_letter_bound_never_exceeds_the_distance():
    rng = random.Random(3)
    for _ in range(2000):
        a = "".join(rng.choice("ABC_1") for _ in range(rng.randint(0, 9)))
        b = "".join(rng.choice("ABC_1") for _ in range(rng.randint(0, 9)))
        assert suggest.bag_bound(a, b, 99) <= suggest.distance(a, b)
