"""The editor never shows yesterday's truth: a plugin's syntax error goes away on
undo and on save, a failed inline test goes away (or comes back) with the text an
undo restores, and the overlap lint after an edit only searches pairs involving
the changed rules."""
from __future__ import annotations

import shutil
from pathlib import Path

from rulekit.analysis import lint as lint_mod
from rulekit.analysis.lint import lint_corpus
from rulekit.rules.loader import bundled_rules_path, load_corpus
from rulekit_lsp.workspace import Corpus

TOML = '''
[[symptom]]
name = "FOO_FAULT"
outcome = "hardware"
sub_domain = "gpu"
rank = 10
[[extractor]]
name = "Foo"
author = "t"
match_re = 'foo fault'
emit = { type = "bad_node", symptom = "FOO_FAULT" }
[[extractor.test]]
line = "foo fault on the bus"
'''
PLUGIN = '''from rulekit.plugin import register_symptom

register_symptom("BAR_FAULT", outcome="hardware", sub_domain="gpu", rank=5)
'''


def _codes(c: Corpus, path: Path) -> list[str]:
    return [d.code for d in c.diagnostics_by_file().get(str(path), [])]


def test_plugin_syntax_error_goes_away_on_undo_and_on_save(make_corpus):
    rules = make_corpus({"a.toml": TOML, "p.py": PLUGIN})
    c = Corpus([rules])
    p = rules / "p.py"
    assert "RK004" not in _codes(c, p)
    c.update(str(p), PLUGIN + "def broken(:\n", 2)  # typing
    assert "RK004" in _codes(c, p)
    c.update(str(p), PLUGIN, 3)  # undo: back to the executed text
    assert "RK004" not in _codes(c, p)
    c.update(str(p), PLUGIN + "def broken(:\n", 4)
    c.update(str(p), PLUGIN, 5, execute=True)  # undo, then save
    assert "RK004" not in _codes(c, p)
    assert "BAR_FAULT" in {s.name for s in c.analyze().registry.all()}


def _run_tests(c: Corpus, path: Path) -> None:
    job = c.test_job(paths=[str(path)], jobs=True)
    results, cache = job.run()
    c.apply_tests(job, results, cache)


def test_failed_test_follows_the_text_an_undo_restores(make_corpus):
    rules = make_corpus({"a.toml": TOML})
    c = Corpus([rules])
    f = rules / "a.toml"
    _run_tests(c, f)
    assert "RK401" not in _codes(c, f)
    broken = TOML.replace("match_re = 'foo fault'", "match_re = 'foo faulty'")
    c.update(str(f), broken, 2)
    _run_tests(c, f)
    assert "RK401" in _codes(c, f)
    c.update(str(f), TOML, 3)  # undo: no test run yet, and no stale RK401 either
    assert "RK401" not in _codes(c, f)
    c.update(str(f), broken, 4)  # redo: the known failure is shown at once
    assert "RK401" in _codes(c, f)
    c.update(str(f), broken.replace("foo fault on the bus", "foo fault on the bus again"), 5)
    assert "RK401" not in _codes(c, f)  # a test whose content never ran: nothing yet


def test_overlap_lint_after_an_edit_searches_only_pairs_with_the_changed_rule(tmp_path, monkeypatch):
    rules = tmp_path / "R"
    shutil.copytree(bundled_rules_path(), rules)
    lint_corpus(load_corpus([rules]), cost=False)  # the first (full) lint fills the memo
    new_pattern = r"NCCL WARN NET/IB : Got completion from peer (?P<peer>\S+) with status=12"
    (rules / "zz_new.toml").write_text(f'''
[[extractor]]
name = "OverlapsIbStatus12"
author = "t"
match_re = '{new_pattern}'
emit = {{ type = "bad_node", symptom = "NCCL_IB_RETRY_EXCEEDED" }}
[[extractor.test]]
line = "NCCL WARN NET/IB : Got completion from peer 10.0.0.1<1234> with status=12"
''')
    calls: list[tuple] = []
    real_memo = lint_mod._memo_search

    def spy(kind, fn, *args):
        if args not in lint_mod._MEMO.table(kind):
            calls.append((kind, args[:2]))
        return real_memo(kind, fn, *args)

    monkeypatch.setattr(lint_mod, "_memo_search", spy)
    diags = lint_corpus(load_corpus([rules]), cost=False)
    assert calls, "the new rule's pairs were searched"
    pair_searches = [args for kind, args in calls if kind in ("overlap", "contains")]
    assert pair_searches and all(new_pattern in args for args in pair_searches), calls  # and no other pair
    assert any(d.code in ("RK306", "RK307") and "OverlapsIbStatus12" in d.message for d in diags), \
        [str(d) for d in diags]


# ---- editor features: textEdit completion, formatter, folding, RK209, line splitting -------------

def test_completion_items_replace_the_whole_symptom_name(make_corpus):
    from lsprotocol import types as T

    from rulekit_lsp import convert
    from rulekit_lsp.features import completion

    rules = make_corpus({"a.toml": TOML})
    c = Corpus([rules])
    text = TOML + '[[extractor]]\nname = "B"\nmatch_re = \'b\'\nemit = { type = "bad_node", symptom = "FOO-FA" }\n'
    path = str(rules / "a.toml")
    c.update(path, text)
    line = text.split("\n").index('emit = { type = "bad_node", symptom = "FOO-FA" }') + 1
    col = len('emit = { type = "bad_node", symptom = "FOO-FA') + 1
    items = completion.complete(c, path, text, line, col)
    lst = convert.completion(items, text, line, completion.word_range(text, line, col))
    foo = next(i for i in lst.items if i.label == "FOO_FAULT")
    assert isinstance(foo.text_edit, T.TextEdit) and foo.text_edit.new_text == "FOO_FAULT"
    r = foo.text_edit.range
    assert (r.start.line, r.start.character, r.end.character) == (line - 1, col - 1 - len("FOO-FA"), col - 1)
    assert completion.word_range("[[ext", 1, 6) == (3, 6)  # table headers keep their brackets


def test_toml_formatter_normalizes_key_spacing_and_indented_headers():
    from rulekit.rules.dsl import format_toml

    text = ('[[extractor]]\nname="X"\n  match_re   =  \'a=b\'\nemit = { type = "bad_node", symptom = "S" }\n'
            '  [[ extractor.test ]]\n  line="a=b"\narr = [\n  "x = y",\n]\n')
    out = format_toml(text)
    assert out == ('[[extractor]]\nname = "X"\nmatch_re = \'a=b\'\nemit = { type = "bad_node", symptom = "S" }\n'
                   '[[extractor.test]]\nline = "a=b"\narr = [\n  "x = y",\n]\n')
    assert format_toml(out) == out


def test_folding_ranges_for_toml_tables_dsl_blocks_and_python():
    from rulekit_lsp.features.folding import folding_ranges

    toml = '# a\n# b\n[[extractor]]\nname = "X"\n\n[[extractor.test]]\nline = "x"\nexpect = "nothing"\n\n[[symptom]]\nname = "S"\n'
    got = folding_ranges("r/a.toml", toml)
    assert (1, 2, "comment") in got and (3, 8, "region") in got and (3, 4, "region") in got and (6, 8, "region") in got
    dsl = 'extractor A {\n  match /x{2}/\n  emit bad_node "S"\n}\n'
    assert folding_ranges("r/a.rule", dsl) == [(1, 4, "region")]
    assert folding_ranges("r/p.py", PLUGIN + "\n\ndef f():\n    return 1\n") == [(6, 7, "region")]


def test_misspelt_symptom_literal_in_a_plugin_is_reported_by_cli_and_server(make_corpus):
    typo = PLUGIN + '\nBAD = ["FOO_FAULTS"]\nOK = ["FOO_FAULT", "NOT_A_SYMPTOM_AT_ALL"]\n'
    rules = make_corpus({"a.toml": TOML, "p.py": typo})
    cli = [d for d in load_corpus([rules]).diagnostics if d.code == "RK209"]
    assert len(cli) == 1 and "did you mean `FOO_FAULT`" in cli[0].message
    assert (cli[0].span.line, cli[0].span.col) == (5, 9)
    lsp = [d for d in Corpus([rules]).diagnostics_by_file()[str(rules / "p.py")] if d.code == "RK209"]
    assert [d.span for d in lsp] == [cli[0].span]


def test_form_feed_and_lone_cr_split_lines_the_same_in_server_and_cli(make_corpus):
    from rulekit.cli.render import format_text
    from rulekit_lsp import convert

    text = ('# form\x0cfeed and a lone\rcarriage return\nsymptom "FOO_FAULT" { outcome hardware sub_domain gpu rank 10 }\n'
            'extractor Foo {\n  match /foo fault/\n  emit bad_node "NOT_REGISTERED"\n  author "t"\n}\n')
    rules = make_corpus({"a.rule": text})
    (cli,) = [d for d in load_corpus([rules]).diagnostics if d.code == "RK203"]
    assert cli.span.line == 5
    assert 'emit bad_node "NOT_REGISTERED"' in format_text([cli], {cli.span.file: text}).split("\n")[1]
    (lsp,) = [d for d in Corpus([rules]).diagnostics_by_file()[str(rules / "a.rule")] if d.code == "RK203"]
    assert lsp.span == cli.span
    assert convert.to_position(text, lsp.span.line, lsp.span.col).line == 4


BLAMED = TOML.replace('rank = 10\n', 'rank = 10\nblame = "node"\n')
OVERLAPPING = BLAMED + '''
[[extractor]]
name = "FooToo"
author = "t"
match_re = 'foo fault on'
emit = { type = "bad_node", symptom = "FOO_FAULT" }
'''


def test_a_lint_that_ran_on_an_older_text_is_not_shown_for_the_new_one(make_corpus):
    """Race: a lint started before an edit finished after it, and its findings (about a
    rule the edit removed) were published for the new text until the next lint."""
    rules = make_corpus({"a.toml": OVERLAPPING})
    c = Corpus([rules])
    f = rules / "a.toml"
    job = c.lint_job()  # lint starts on the text with the overlap ...
    diags = job.run()
    assert any(d.code in ("RK306", "RK307") and "FooToo" in d.message for d in diags)
    c.update(str(f), BLAMED, 2)  # ... the user deletes FooToo while it runs ...
    assert not c.apply_lint(job, diags)  # ... its findings are dropped, not shown for version 2
    assert not any("FooToo" in d.message for d in c.diagnostics_by_file()[str(f)])
    job = c.lint_job()  # the lint the edit scheduled lands
    assert c.apply_lint(job, job.run())
    assert not any(d.code in ("RK306", "RK307") for d in c.diagnostics_by_file()[str(f)])
    c.update(str(f), OVERLAPPING, 3)
    job = c.lint_job()
    assert c.apply_lint(job, job.run())
    assert any(d.code in ("RK306", "RK307") for d in c.diagnostics_by_file()[str(f)])
