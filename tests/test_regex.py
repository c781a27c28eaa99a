"""rulekit.extract.regex.check_pattern: every RE2-incompatible construct is reported with
the right code at the right offsets, valid patterns produce no problems, and the
Python/RE2 divergences the accelerator must not trust are recognised."""
from __future__ import annotations

import pytest

from rulekit.extract.regex import check_pattern, compile_big, compile_pattern, group_names, python_divergence

# (pattern, [(code, covered text)]): the covered text is pattern[start:end]
BAD = [
    (r"error(?! ignored)", [("RK302", "(?!")]),
    (r"error(?= now)", [("RK302", "(?=")]),
    (r"(?<=GPU )fell", [("RK302", "(?<=")]),
    (r"(?<!no )error", [("RK302", "(?<!")]),
    (r"(a)\1", [("RK302", r"\1")]),
    (r"(?P<n>ab)x(?P=n)", [("RK302", "(?P=n)")]),
    (r"a++b", [("RK302", "++")]),
    (r"a*+b", [("RK302", "*+")]),
    (r"a?+b", [("RK302", "?+")]),
    (r"x\d{2}+", [("RK302", "}+")]),
    (r"(?>ab|a)c", [("RK302", "(?>")]),
    (r"(a)?(?(1)b|c)", [("RK302", "(?(")]),
    (r"(?#note)xid", [("RK302", "(?#note)")]),
    (r"\Gfoo", [("RK302", r"\G")]),
    (r"xid{,3}", [("RK302", "{,3}")]),
    (r"caf\u00e9", [("RK302", r"\u00e9")]),
    (r"[\S,]+", [("RK309", r"\S")]),
    (r"[^\W_]x", [("RK309", r"\W")]),
    (r"(?<=a)b(?!c)\1", [("RK302", "(?<="), ("RK302", "(?!"), ("RK302", r"\1")]),
    (r"(unclosed", [("RK301", "(")]),
    (r"x{1001}", [("RK302", "x{1001}")]),
]

GOOD = [
    r"NVRM: Xid \(PCI:(?P<pci>[0-9a-f:.]+)\): (?P<xid>\d+),",
    r"[*+]+",  # quantifier characters inside a class
    r"[]a]+", r"[^]a]\S+", r"a\+\+", r"\(\?!literal\)", r"a{2}b{3,}c{4,5}",
    r"(?i)\bwarn(?:ing)?\b", r"x+?y*?z??", r"\pL+", r"[[:alpha:]]+", r"\Qa.b\E", r"a\z",
    r"(?P<a>x)|(?P<b>y)", r"[\d\s]", r"[^\d]", "café → ok",
]


@pytest.mark.parametrize("pattern,expected", BAD)
def test_problems_at_the_construct(pattern, expected):
    got = [(p.code, pattern[p.start:p.end]) for p in check_pattern(pattern)]
    assert got == expected
    for p in check_pattern(pattern):
        assert p.message and 0 <= p.start < p.end <= len(pattern)


@pytest.mark.parametrize("pattern", GOOD)
def test_valid_patterns_have_no_problems(pattern):
    assert check_pattern(pattern) == []
    compile_pattern(pattern)


def test_messages_say_why():
    (p,) = check_pattern(r"error(?! ignored)")
    assert "lookahead" in p.message and "RE2" in p.message
    (p,) = check_pattern(r"[\S,]")
    assert "Python's re" in p.message and "(?:\\S|[...])" in p.message


@pytest.mark.parametrize("pattern,diverges", [
    (r"[[:alpha:]]+", True), (r"x{,3}", True), (r"[a-z]+", False), (r"\[:x:\]", False), (r"[\[:]x", False),
])
def test_python_divergence(pattern, diverges):
    assert (python_divergence(pattern) is not None) == diverges


def test_group_names_and_big_compile():
    assert group_names(r"(?P<a>x)(?P<b>y)|z") == {"a", "b"}
    assert group_names(r"(") == set()
    big = compile_big(b"(?m)" + b"|".join(b"(?:rule%d: x)" % i for i in range(300)))
    assert big.search(b"foo\nrule299: x\n").start() == 4
