"""rulekit.extract.literals: required-literal factors of rule regexes and the rarity-based
key choice.  Soundness is checked on data: on every fixture line a pattern matches,
each of its factors has a key present in the lower-cased line bytes."""
from __future__ import annotations

from pathlib import Path

import pytest

from rulekit.extract.literals import choose_keys, factors_of, sample_key_counts
from rulekit.extract.regex import compile_pattern

FIX = Path(__file__).parent / "fixtures" / "accel"


def F(*alts: str) -> frozenset:
    return frozenset(a.encode("utf-8") for a in alts)


CASES = [
    (r"lm loss: (?:inf|-inf)\b", [F("lm loss: inf", "lm loss: -inf")]),
    (r"NVRM: Xid \(PCI:(?P<pci>[0-9a-f:.]+)\): 79,", [F("nvrm: xid (pci:"), F("): 79,")]),
    (r"(?i)\bwarn(?:ing)?\b", [F("warn", "warning")]),
    (r"NCCL INFO .*(?:failed|error)", [F("nccl info "), F("failed", "error")]),
    (r"^[EF]\d{4} ", []),
    (r"\w+Error:", [F("error:")]),
    (r"(?i)kill", [F("kill", "\u212aill")]),
    (r"(?i)kiss", [F("kiss", "kisſ", "kiſs", "kiſſ", "\u212aiss", "\u212aisſ", "\u212aiſs", "\u212aiſſ")]),
    (r"torch\.(?:cuda\.)?OutOfMemoryError", [F("torch.outofmemoryerror", "torch.cuda.outofmemoryerror")]),
    (r"x{3}yy", [F("xxxyy")]),
    (r"[Uu]nhandled", [F("unhandled")]),
    (r"(?:un)?recoverable", [F("unrecoverable", "recoverable")]),
    (r"error(?P<m>.*)", [F("error")]),
    (r"ab", []),  # shorter than 3 bytes
    (r"caf[ée] au", [F("café au", "cafe au")]),
    (r"Café", [F("café")]),  # ASCII-only lower-casing: é stays é, C becomes c
    (r"(?i)über alles", [F("ber alles", "ber alleſ")]),  # a cased non-ASCII letter under (?i) breaks the run
    (r"(abc|de.f)", []),  # one alternative has no usable literal
    (r"(?:foo.*bar)+", [F("foo"), F("bar")]),
    (r"a\x{fffd}b", None),  # RE2-only syntax: Python cannot parse it
    (r"[[:alpha:]]+ abc", None),  # Python would misread the POSIX class
    (r"�abc", [F("abc")]),  # U+FFFD may stand for any invalid bytes: never part of a key
]


@pytest.mark.parametrize("pattern,expected", CASES)
def test_factors(pattern, expected):
    got = factors_of(pattern)
    if expected is None:
        assert got is None
    else:
        assert got is not None and sorted(map(sorted, got)) == sorted(map(sorted, expected))


def test_factors_are_sound_on_fixture_lines():
    """Every factor of a pattern has a key on every line the pattern matches."""
    patterns = [p for p in (FIX / "patterns.txt").read_text("utf-8").split("\n") if p]
    raw_lines = (FIX / "edge.log").read_bytes().split(b"\n")
    checked = 0
    for p in patterns:
        rx = compile_pattern(p)
        for raw in raw_lines:
            text = raw.decode("utf-8", "replace")
            if rx.search(text) is None:
                continue
            low = raw.lower()
            for factor in factors_of(p) or []:
                assert any(k in low for k in factor), (p, raw, factor)
                checked += 1
    assert checked > 20


def test_rarest_factor_wins_over_longest():
    factors = [factors_of(r"NCCL INFO Channel .*(?:ring failure|tree failure)")]
    sample = b"".join(b"nccl info channel 03/0 : 0[0] -> 1[1] via P2P\n" for _ in range(50)) + b"ring failure once\n"
    (choice,) = choose_keys(factors, sample)
    assert choice.factor == F("ring failure", "tree failure")
    assert choice.sample_hits == 1 and choice.sample_lines == 51
    (no_sample,) = choose_keys(factors, None)
    assert no_sample.factor == F("nccl info channel ")  # longest shortest key without a sample


def test_ties_go_to_the_less_shared_literal():
    pats = [r"NVRM: Xid \(PCI:(?P<pci>[0-9a-f:.]+)\): 79,", r"NVRM: Xid \(PCI:(?P<pci>[0-9a-f:.]+)\): 48,"]
    choices = choose_keys([factors_of(p) for p in pats], b"benign line\n")
    assert [c.factor for c in choices] == [F("): 79,"), F("): 48,")]


def test_sample_counts_lines_not_occurrences():
    counts = sample_key_counts([b"warn", b"zzz"], b"WARN warn\nok\nwarning\n")
    assert counts == {b"warn": 2, b"zzz": 0}


def test_unfilterable_has_no_choice():
    (c,) = choose_keys([factors_of(r"^[EF]\d{4} ")], b"x\n")
    assert c.factor is None
