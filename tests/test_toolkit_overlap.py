"""The exact overlap / shadowing search (rulekit.analysis.overlap), checked
against brute force: every string up to length 5 over a small alphabet, with
RE2 (and Python's re for match positions) as the reference."""
from __future__ import annotations

import itertools
import re

import re2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import re._parser as sre_parse  # type: ignore[import-not-found]
from hypothesis import assume

from rulekit.analysis.overlap import C, compile_nfa, contains, core_items, overlap

ALPHABET = "ab1 "
STRINGS = ["".join(p) for n in range(6) for p in itertools.product(ALPHABET, repeat=n)]

ATOMS = ["a", "b", "1", " ", "[ab]", r"\d", "a b"]
QUANT = ["", "", "", "?", "*", "+", "{1,2}", "{2}"]


@st.composite
def patterns(draw, anchors: bool = True, wide: bool = True):
    atoms = ATOMS + ([".", "[^a]"] if wide else [])  # wide classes never count as shared
    parts = []
    n = draw(st.integers(1, 4))
    for i in range(n):
        if draw(st.integers(0, 5)) == 0:
            alts = [draw(st.sampled_from(atoms)) for _ in range(2)]
            atom = f"(?:{'|'.join(alts)})"
        else:
            atom = draw(st.sampled_from(atoms))
        # the first and last part can never match empty, so the pattern is its own core
        # (the search drops nullable ends, which does not change the lines matched)
        quant = QUANT if 0 < i < n - 1 else [q for q in QUANT if q not in ("?", "*")]
        parts.append(atom + draw(st.sampled_from(quant)))
    p = "".join(parts)
    if anchors:
        if draw(st.booleans()) and draw(st.booleans()):
            p = "^" + p
        if draw(st.booleans()) and draw(st.booleans()):
            p = p + "$"
        if draw(st.integers(0, 4)) == 0:
            p = r"\b" + p
    return p


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(patterns(), patterns())
def test_containment_matches_brute_force(a, b):
    ra, rb = re2.compile(a), re2.compile(b)
    res = contains(a, b, budget=20000)
    assert res.found is not None
    if res.found:
        bad = [s for s in STRINGS if rb.search(s) and not ra.search(s)]
        assert not bad, f"claimed {b!r} subset of {a!r}, but {bad[0]!r}"
    else:
        w = res.witness
        assert rb.search(w) and not ra.search(w), (a, b, w)


def _own_core(p: str) -> bool:
    tree = sre_parse.parse(p)
    items = list(tree)
    while len(items) == 1 and items[0][0] is C.SUBPATTERN and not (items[0][1][1] or items[0][1][2]):
        items = list(items[0][1][3])
    return core_items(tree) == items


def _spans(p: str, s: str) -> set[tuple[int, int]]:
    rx = re.compile(p)
    return {(i, j) for i in range(len(s) + 1) for j in range(i, len(s) + 1) if rx.fullmatch(s, i, j)}


@SETTINGS
@given(patterns(anchors=False, wide=False), patterns(anchors=False, wide=False))
def test_overlap_matches_brute_force(a, b):
    # the search compares match cores; brute force compares whole matches, so only
    # patterns that are their own core qualify (sre factors `a|a b` into `a(?:| b)`)
    assume(_own_core(a) and _own_core(b))
    res = overlap(a, b, budget=20000, min_shared=1)
    assert res.found is not None
    if res.found:
        assert re2.search(a, res.witness) and re2.search(b, res.witness), (a, b, res.witness)
        return
    # no overlap claimed: no string has a match of a and a match of b sharing a character
    for s in STRINGS:
        if not (re2.search(a, s) and re2.search(b, s)):
            continue
        sa, sb = _spans(a, s), _spans(b, s)
        assert not any(i < l and k < j for i, j in sa for k, l in sb if j > i and l > k), (a, b, s)


def test_examples():
    assert overlap("NCCL WARN", "Xid").found is False
    assert overlap("NCCL WARN .*timeout", "Xid").found is False  # only pasted into `.*`
    r = overlap(r"foo\d+bar", "o1b")
    assert r.found and r.witness == "foo1bar"
    assert overlap("abc", "bcd").found is False  # shares only 2 characters (< 3)
    assert overlap("abc", "bcd", min_shared=2).found is True
    assert contains("Xid", r"NVRM: Xid \d+").found is True
    c = contains(r"NVRM: Xid \d+", "Xid")
    assert c.found is False and c.witness == "Xid"
    assert contains(r"\bfoo\b", "foo").witness is not None
    assert contains("(?i)error", "ERROR: x").found is True


def test_leading_and_trailing_nullable_parts_are_dropped():
    # same lines matched; the match core is what must overlap
    assert overlap(r".*NCCL WARN(?P<rest>.*)", "Xid").found is False


def test_big_repetition_is_marked_approximate():
    nfa = compile_nfa(r"a{100}", max_repeat=40)
    assert not nfa.exact
    assert compile_nfa(r"a{3}").exact
