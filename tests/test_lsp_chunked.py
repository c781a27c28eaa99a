"""The language server's incremental TOML parse (`rulekit_lsp.chunked`) gives exactly
what `parse_rules` gives on the whole text: for every TOML rule file of the
repository, after edits inside one table, and for the shapes it must hand back to
the whole-file parse (a diagnostic anywhere, a plain table, an inline table in the
preamble)."""
from __future__ import annotations

from pathlib import Path

import pytest

from rulekit.rules.toml_frontend import parse_rules
from rulekit_lsp.chunked import ChunkedToml, split

REPO = Path(__file__).resolve().parent.parent
SKIP = {".venv", "node_modules", ".git", "build", "dist"}  # (build/, dist/: copies a pip install or a build left)
RULE_FILES = sorted(p for p in REPO.rglob("*.toml") if not SKIP & set(p.relative_to(REPO).parts)
                    and not p.name.endswith(".test.toml") and "[[" in p.read_text(errors="replace"))


def same(text: str, path: str, parser: ChunkedToml | None = None) -> ChunkedToml:
    parser = parser or ChunkedToml(path)
    got = parser.parse(text)
    want = parse_rules(text, path)
    assert repr(got[0]) == repr(want[0])
    assert got[1] == want[1]
    return parser


def test_there_are_files_to_check():
    assert len(RULE_FILES) > 20 and any(p.name == "xid_catalog.toml" for p in RULE_FILES)


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_rule_file_parses_as_the_whole_file_does(path: Path):
    same(path.read_text(encoding="utf-8", errors="replace"), str(path))


def test_an_edit_reparses_only_its_table_and_stays_exact():
    path = REPO / "bundled_rules" / "xid_catalog.toml"
    text = path.read_text()
    parser = same(text, str(path))
    n = len(split(text, str(path))[1])
    edited = text.replace('symptom = "XID-{xid}-{name}"', 'symptom = "UNREGISTERED_XID-{xid}-{name}"', 1)
    same(edited, str(path), parser)
    assert parser.reused == n - 1  # one table changed
    same(edited.replace("rank = 900", "rank = 901", 1), str(path), parser)
    assert parser.reused == n - 1  # now only that symptom
    # an edit that adds lines shifts every later table: still exact
    same(edited.replace('[[outcome_rule]]', '# a comment\n\n[[outcome_rule]]', 1), str(path), parser)


def test_mixed_kinds_keep_the_whole_parse_order():
    text = ('author = "a"\n[[extractor]]\nname = "E1"\nmatch_re = "a"\nemit = { type = "bad_node", symptom = "S" }\n'
            '[[symptom]]\nname = "S"\noutcome = "hardware"\nsub_domain = "gpu"\nrank = 1\n'
            '[[catalog]]\nname = "C"\nmatch_re = "x (?P<k>\\\\d+)"\nkey = "k"\nemit = { type = "bad_node", symptom = "S" }\n'
            '[catalog.entries]\n"1" = {}\n'
            '[[extractor]]\nname = "E2"\nmatch_re = "b"\nemit = { type = "bad_node", symptom = "S" }\n'
            '[[extractor.test]]\nline = "b"\n')
    same(text, "/x/m.toml")
    assert split(text, "/x/m.toml") is not None



def test_a_symptom_after_a_catalog_with_symptoms_keeps_the_whole_parse_order():
    """A catalog whose entries declare symptoms, then a plain [[symptom]]: the whole-file
    parse lists the plain one first (the registry's order), so the editor must too."""
    text = ('author = "a"\n'
            '[[symptom]]\nname = "FIRST"\noutcome = "hardware"\nsub_domain = "gpu"\nrank = 1\n'
            '[[catalog]]\nname = "C"\nmatch_re = "x (?P<k>\\\\d+)"\nkey = "k"\n'
            'emit = { type = "bad_node", symptom = "{symptom}" }\n'
            '[catalog.entries]\n"1" = { symptom = "FROM_CATALOG", outcome = "hardware", sub_domain = "gpu", rank = 5 }\n'
            '[[symptom]]\nname = "AFTER_CATALOG"\noutcome = "network"\nsub_domain = "nic"\nrank = 2\n'
            '[[extractor]]\nname = "E"\nmatch_re = "b"\nemit = { type = "bad_node", symptom = "AFTER_CATALOG" }\n')
    parser = same(text, "/x/s.toml")
    names = [s.name for s in parser.parse(text)[0].symptoms]
    assert "FROM_CATALOG" in names and names.index("AFTER_CATALOG") < names.index("FROM_CATALOG")


@pytest.mark.parametrize("text", [
    'author = "a"\n[[extractor]]\nname = "E"\nmatch_re = "a"\nemit = { type = "bad_node", symptom = "S" }\nbogus = 1\n',
    'author = 7\n[[symptom]]\nname = "S"\noutcome = "hardware"\nsub_domain = "gpu"\nrank = 1\n',
    '[[symptom]]\nname = "S"\noutcome = "hardware"\nsub_domain = "gpu"\nrank = "high"\n[[symptom]]\nname = "T"\n',
    '[[extractor]]\nname = "E"\nmatch_re = "a"\n[[extractor]\n',
    '[[symptom]]\nname = "S"\n[settings]\nx = 1\n',
    '[[widget]]\nname = "W"\n',
    'symptom = [{ name = "S", outcome = "hardware", sub_domain = "gpu", rank = 1 }]\n[[extractor]]\nname = "E"\n',
    '[[catalog.test]]\nline = "x"\n[[catalog]]\nname = "C"\n',
    'author = "only a preamble"\n',
])
def test_shapes_handed_to_the_whole_file_parse(text: str):
    same(text, "/x/m.toml")
