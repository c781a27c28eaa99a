"""Which pairs of extractors the lint's exact overlap search must see, found through
an index instead of trying every pair.

A pair is searched (RK306 / RK307) when the two can see the same lines (sources
and formats agree, not two entries of one catalog) and share a required literal:
a key of one contains a key of the other, or one has no key (`static_pair`, the
definition; `tests/test_lint_index.py` compares the index with it pair by pair).
The index finds those pairs through the keys themselves: an Aho-Corasick
automaton over every key, run over every key, gives each key the keys it contains;
a signature's partners are the signatures holding a related key.  Work grows with
the pairs that share literals, not with all pairs.

Of those, only pairs the screens of `overlap_screen` cannot rule out are kept
(`survivors`): both patterns compile to the search's NFAs and may overlap.  The
survivor relation is stored per signature (`table`: a lint memo table, kept on
disk), so a later lint, in this process or the next, computes partners only for
signatures it has not seen: an edit re-checks the edited rule's candidates only.

Signatures are `(pattern, sources, formats, catalog unit or None)`.  Pure apart
from the table it is given; not thread-safe (the lint holds a lock).
"""
from __future__ import annotations

from typing import Callable, Iterable, MutableMapping

import ahocorasick_rs

Sig = tuple


def compatible(sa: Sig, sb: Sig) -> bool:
    """Can the two see the same line?  (sources and formats agree, not one catalog)"""
    for x, y in ((sa[1], sb[1]), (sa[2], sb[2])):
        if x and y and not set(x) & set(y):
            return False
    return not (sa[3] is not None and sa[3] == sb[3])


def static_pair(sa: Sig, sb: Sig, keys: Callable[[str], frozenset]) -> bool | None:
    """The definition the index computes: None when the two can never see the same
    line, else whether they share a required literal (or one has none)."""
    if not compatible(sa, sb):
        return None
    ka, kb = keys(sa[0]), keys(sb[0])
    return not ka or not kb or any(x in y or y in x for x in ka for y in kb)


class PairIndex:
    """The survivor relation over every signature seen, grown incrementally.

    `keys(pattern)`: its required literals (memoized by the caller);
    `keep(sa, sb)`: whether a statically paired couple survives the screens;
    `table`: sig -> frozenset of partner sigs (the durable part, a memo table)."""

    def __init__(self, keys: Callable[[str], frozenset], keep: Callable[[Sig, Sig], bool],
                 table: MutableMapping[Sig, frozenset]):
        self.keys = keys
        self.keep = keep
        self.table = table
        # the key index over `table`'s signatures, built when new signatures come
        self._by_key: dict[bytes, set[Sig]] | None = None
        self._keyless: set[Sig] = set()
        self._related: dict[bytes, set[bytes]] = {}
        self._indexed: set[Sig] = set()

    # ---- the key index -----------------------------------------------------------------
    def _index(self, sigs: Iterable[Sig]) -> None:
        """Add signatures to the key index (and relate their new keys to every key)."""
        if self._by_key is None:
            self._by_key = {}
        by_key = self._by_key
        new_keys: list[bytes] = []
        for s in sigs:
            if s in self._indexed:
                continue
            self._indexed.add(s)
            ks = self.keys(s[0])
            if not ks:
                self._keyless.add(s)
            for k in ks:
                got = by_key.get(k)
                if got is None:
                    by_key[k] = got = set()
                    new_keys.append(k)
                got.add(s)
        if not new_keys:
            return
        related = self._related
        everything = list(by_key)
        # every key contained in a new key (old or new)
        ac = ahocorasick_rs.BytesAhoCorasick(everything)
        for y in new_keys:
            mine = related.setdefault(y, set())
            for xi, _s, _e in ac.find_matches_as_indexes(y, overlapping=True):
                x = everything[xi]
                mine.add(x)
                related.setdefault(x, set()).add(y)
        # every old key containing a new one
        if len(new_keys) < len(everything):
            fresh = set(new_keys)
            ac_new = ahocorasick_rs.BytesAhoCorasick(new_keys)
            for y in everything:
                if y in fresh:
                    continue
                for xi, _s, _e in ac_new.find_matches_as_indexes(y, overlapping=True):
                    x = new_keys[xi]
                    related[x].add(y)
                    related.setdefault(y, set()).add(x)

    def _static_partners(self, s: Sig) -> set[Sig]:
        """Indexed signatures paired with s by `static_pair` (s itself included when two
        rules share it)."""
        assert self._by_key is not None
        ks = self.keys(s[0])
        if not ks:
            out = set(self._indexed)
        else:
            out = set(self._keyless)
            by_key = self._by_key
            for x in ks:
                for y in self._related.get(x, ()):
                    out.update(by_key[y])
        return {t for t in out if compatible(s, t)}

    # ---- the survivor relation ---------------------------------------------------------
    def update(self, sigs: Iterable[Sig], checkpoint: Callable[[], None] | None = None) -> int:
        """Make sure every signature's survivors are in the table; the number of
        signatures whose partners were computed now (0: all were known)."""
        table = self.table
        new = [s for s in dict.fromkeys(sigs) if s not in table]
        if not new:
            return 0
        known = [s for s in table]
        self._index(known)
        self._index(new)
        done: set[Sig] = set()
        fresh = set(new)
        pending: dict[Sig, set[Sig]] = {}  # pairs found for new signatures not done yet
        for s in new:
            if checkpoint is not None:
                checkpoint()  # a first (full) pass is long: let an edit in between signatures
            mine = pending.pop(s, set())
            for t in self._static_partners(s):
                if t in done:
                    continue  # a new one already done: it recorded the pair both ways
                if t != s and t not in fresh and t not in table:
                    continue  # indexed earlier but dropped from the table since: redone when it returns
                if self.keep(s, t):
                    mine.add(t)
                    if t == s:
                        continue
                    if t in fresh:
                        pending.setdefault(t, set()).add(s)
                    else:
                        table[t] = table[t] | {s}
            # written last: a signature is in the table only once all its pairs are
            table[s] = frozenset(mine)
            done.add(s)
        return len(new)

    def pairs(self, sigs: Iterable[Sig]) -> list[tuple[Sig, Sig]]:
        """Surviving pairs among these signatures, each once ((x, x) when two rules
        share x)."""
        current = set(sigs)
        out, emitted = [], set()
        for x in current:
            for y in self.table.get(x, ()):
                if y in current and (y, x) not in emitted:
                    emitted.add((x, y))
                    out.append((x, y))
        return out


def survivors_all_pairs(sigs: list[Sig], keep: Callable[[Sig, Sig], bool]) -> list[tuple[Sig, Sig]]:
    """`overlap_all_pairs`: every compatible pair the screens keep (minutes on a large
    corpus: all pairs are tried)."""
    return [(a, b) for i, a in enumerate(sigs) for b in sigs[i:] if compatible(a, b) and keep(a, b)]
