"""`rulekit fmt`: the DSL formatter is idempotent, keeps every comment and the
meaning of the file; TOML rule files are normalized through tomlkit with their
comments and data unchanged; the CLI rewrites or (--check) reports."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rulekit.cli import app
from rulekit.rules.dsl import format_dsl, format_toml, parse_file, toml_to_dsl
from rulekit.rules.loader import bundled_rules_path

MESSY = '''# file header
author "me"   # who wrote it
symptom "X" { outcome hardware sub_domain gpu rank 950 docs "d\\"q" aliases "a","b" }
# before A
extractor A { # on the header
  source applog,syslog
  # before match
  match /a\\/b (?P<x>\\d+)/ # after match
  emit bad_node "X-{x}"   node "{x}" fields {a="b" c = "d"}
  test "a/b 1" => bad_node "X-1" captures { x = "1" }
  test "zz" with { source = "syslog" } => nothing
  # last in A
}
filter F LATE+5 { demote "X" demote "Y-*" when "Z" on same node
 for each node with at least 2 "XID-74-*" {
   add bad_node "NV"
   demote them } }
refiner R FINAL { when any "A*" discard "B", "C*" prefer "A" over "B" }
# trailing comment of the file
'''

GOLDEN = '''# file header
author "me"  # who wrote it

symptom "X" {
  outcome hardware
  sub_domain gpu
  rank 950
  docs "d\\"q"
  aliases "a", "b"
}

# before A
extractor A {  # on the header
  source applog, syslog
  # before match
  match /a\\/b (?P<x>\\d+)/  # after match
  emit bad_node "X-{x}" node "{x}" fields { a = "b", c = "d" }
  test "a/b 1" => bad_node "X-1" captures { x = "1" }
  test "zz" with { source = "syslog" } => nothing
  # last in A
}

filter F LATE + 5 {
  demote "X"
  demote "Y-*" when "Z" on same node
  for each node with at least 2 "XID-74-*" {
    add bad_node "NV"
    demote them
  }
}

refiner R FINAL {
  when any "A*" discard "B", "C*"
  prefer "A" over "B"
}

# trailing comment of the file
'''


def comments(text: str) -> list[str]:
    return sorted(m.strip() for m in re.findall(r"#[^\n]*", re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)))


def model(text: str) -> list:
    rs, diags = parse_file(text, "x.rule")
    assert diags == []
    return [(r.name, getattr(r, "match_re", None), getattr(r, "emit", None) and r.emit.fields,
             getattr(r, "priority", None), getattr(r, "tests", None) and [(t.line, t.expect) for t in r.tests])
            for r in rs.rules] + [(s.name, s.rank, s.aliases) for s in rs.symptoms]


def test_golden_layout():
    assert format_dsl(MESSY) == GOLDEN


def test_idempotent_and_comment_preserving():
    once = format_dsl(MESSY)
    assert format_dsl(once) == once
    assert comments(once) == comments(MESSY)
    assert model(once) == model(MESSY)


CORPUS_DSL = [p for p in sorted(bundled_rules_path().glob("*.toml")) if not p.name.endswith(".test.toml")]


@pytest.mark.parametrize("path", CORPUS_DSL, ids=[p.name for p in CORPUS_DSL])
def test_converted_corpus_is_stable_under_fmt(path):
    dsl = toml_to_dsl(path.read_text(), str(path))
    assert format_dsl(dsl) == dsl


def test_bundled_rule_files_are_formatted():
    for p in bundled_rules_path().glob("*.rule"):
        assert format_dsl(p.read_text()) == p.read_text(), p


def test_syntax_errors_leave_the_text_alone():
    bad = "extractor A {\n  match /x/\n  emit bad_node\n"
    assert format_dsl(bad) == bad


TOML_FILES = sorted(bundled_rules_path().glob("*.toml"))


@pytest.mark.parametrize("path", TOML_FILES, ids=[p.name for p in TOML_FILES])
def test_toml_fmt_keeps_data_and_comments(path):
    text = path.read_text()
    out = format_toml(text)
    assert tomllib.loads(out) == tomllib.loads(text)
    assert [ln.strip() for ln in out.splitlines() if ln.strip().startswith("#")] == \
        [ln.strip() for ln in text.splitlines() if ln.strip().startswith("#")]
    assert format_toml(out) == out


def test_toml_golden():
    messy = ('author = "me"   \n# symptoms\n[[symptom]]\nname = "X"  # the name\noutcome = "hardware"\n'
             'sub_domain = "gpu"\nrank = 1\n[[extractor]]\nname = "A"\n\n\n\nmatch_re = \'x\'\n'
             'emit = { type = "bad_node", symptom = "X" }\n[[extractor.test]]\nline = "x"\n\n\n')
    want = ('author = "me"\n\n# symptoms\n[[symptom]]\nname = "X"  # the name\noutcome = "hardware"\n'
            'sub_domain = "gpu"\nrank = 1\n\n[[extractor]]\nname = "A"\n\nmatch_re = \'x\'\n'
            'emit = { type = "bad_node", symptom = "X" }\n[[extractor.test]]\nline = "x"\n')
    assert format_toml(messy) == want
    assert format_toml("not [ toml") == "not [ toml"


def test_cli_fmt(tmp_path: Path):
    f = tmp_path / "a.rule"
    f.write_text(MESSY)
    t = tmp_path / "b.toml"
    t.write_text('author = "me"   \n')
    runner = CliRunner()
    r = runner.invoke(app, ["fmt", "--check", str(tmp_path)])
    assert r.exit_code == 1 and "would reformat" in r.output
    assert f.read_text() == MESSY
    r = runner.invoke(app, ["fmt", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert f.read_text() == GOLDEN and t.read_text() == 'author = "me"\n'
    r = runner.invoke(app, ["fmt", "--check", str(tmp_path)])
    assert r.exit_code == 0
    (tmp_path / "bad.rule").write_text("extractor {\n")
    r = runner.invoke(app, ["fmt", str(tmp_path)])
    assert r.exit_code == 1 and "RK003" in r.output


def test_hash_inside_strings_and_regexes_is_not_a_comment():
    text = 'extractor A {\n  docs "x # y"\n  match /a#b\\/c/  # real\n  emit bad_node "S#1"\n}\n'
    assert format_dsl(text) == text
    rs, _ = parse_file(text, "h.rule")
    assert rs.rules[0].match_re == "a#b/c" and rs.rules[0].docs == "x # y" and rs.rules[0].emit.symptom == "S#1"


def test_crlf_and_byte_order_mark():
    text = '\ufeff# c\r\nextractor A {\r\n  match /x/  # m\r\n  emit bad_node "S"\r\n}\r\n'
    rs, diags = parse_file(text, "w.rule")
    assert diags == [] and rs.rules[0].name == "A" and rs.rules[0].span.line == 2
    out = format_dsl(text)
    assert out == '# c\r\nextractor A {\r\n  match /x/  # m\r\n  emit bad_node "S"\r\n}\r\n'
    assert format_dsl(out) == out
