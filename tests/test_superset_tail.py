"""The gate form's end is trimmed to the first place a match could end
(`superset._trim_tail`): still a superset of the rule on every line, with one match
end where a `[^\\n]*`, `\\S+` or `\\d+` at the end made Hyperscan report one per byte."""
from __future__ import annotations

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from rulekit.extract.accel import hyperscan_available
from rulekit.extract.superset import superset_of
from rulekit.rules.loader import load_corpus


def _gate(pattern: str):
    text = superset_of(pattern).text
    assert text is not None
    return re2.compile(text.encode("ascii"))


def test_the_end_is_trimmed_to_its_first_possible_end():
    assert superset_of(r"(?P<p>[\w.-]+): error: (?P<what>unrecognized arguments: [^\n]*|the following)").text == (
        r"\x3a\x20error\x3a\x20(?:unrecognized\x20arguments\x3a\x20|the\x20following)")
    assert superset_of(r"timeout (?P<workload>\S+)").text == r"timeout\x20(?:\S|[\x80-\xff]{1,4})"
    assert superset_of(r"NCCL version (?P<v>\d+\.\d+)").text.endswith(r"\x2e(?:[\d]|[\x80-\xff]{1,4})")
    # a group's flags stay on what it holds; an anchor at the end stops the trimming
    assert superset_of(r"(?i:foo(?:bar)+)").text == "(?:[fF][oO][oO][bB][aA][rR])"
    assert superset_of(r"Killed\s+$").text.endswith("+$")


@pytest.mark.skipif(not hyperscan_available(), reason="Hyperscan is not installed here")
def test_hyperscan_reports_one_match_end_where_the_tail_repeated():
    """Hyperscan reports every end of every match: the rule's own form once per byte
    of the arguments, the trimmed gate form once."""
    import hyperscan

    def ends(expr: bytes) -> int:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=[expr], ids=[0], flags=[hyperscan.HS_FLAG_MULTILINE])
        found = []
        db.scan(line, match_event_handler=lambda *a: found.append(a[2]))
        return len(found)

    pattern = r"error: (?P<what>unrecognized arguments: [^\n]*|the following arguments are required)"
    line = b"train.py: error: unrecognized arguments: --lr 3e-4 --steps 100"
    assert ends(pattern.encode()) > 20
    assert ends(superset_of(pattern).text.encode("ascii")) == 1


def test_every_bundled_extractor_gate_matches_its_own_test_lines():
    engine = load_corpus(None).engine
    checked = 0
    for rule in engine.extractors:
        ss = superset_of(rule.match_re)
        if ss.text is None:
            continue
        gate = re2.compile(ss.text.encode("ascii"))
        rx = re2.compile(rule.match_re)
        for t in rule.tests:
            for line in t.line.split("\n"):
                if rx.search(line):
                    checked += 1
                    assert gate.search(line.encode("utf-8")), (rule.name, line)
    assert checked > 300


TAILS = [r"[^\n]*", r"\S+", r"\d+", r"(\w+)", r"(?:ab|c[^\n]*)", r"(?:x|y+)+", r"(?i:q+)", r"(?:z{2,3})",
         r"(?:k|)", r"\s*", "é+", r"[^,]+"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TAILS), min_size=1, max_size=3),
       st.text(alphabet="abcxyzqQkKé,0123 \t-", max_size=30))
def test_trimmed_forms_stay_supersets(tails, rest):
    pattern = "fix:" + "".join(tails)
    gate = _gate(pattern)
    rx = re2.compile(pattern)
    line = "fix:" + rest
    if rx.search(line):
        assert gate.search(line.encode("utf-8")), (pattern, line)
