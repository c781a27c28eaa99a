"""The language server's logic through its pure functions: workspace index,
hover, navigation, rename, completion, symbols, code actions, code lens,
semantic tokens, inlay hints, settings and the LSP position conversion."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types as T

from rulekit.diagnostics import Diagnostic, Span
from rulekit_lsp import convert
from rulekit_lsp.features import completion, editing, hover, inlay, lens, navigation, symbols, tokens
from rulekit_lsp.occurrences import DEF, REF, occurrences
from rulekit_lsp.settings import Settings, parse_settings
from rulekit_lsp.workspace import Corpus, Workspace, detect_rule_folders

FIX = Path(__file__).parent / "lsp_fixtures"


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    shutil.copytree(FIX / "ws", tmp_path / "ws")
    return (tmp_path / "ws").resolve()


@pytest.fixture()
def corpus(ws: Path) -> Corpus:
    w = Workspace()
    w.configure([str(ws)])
    assert len(w.corpora) == 1
    return w.corpora[0]


def pos(path: Path, needle: str, offset: int = 0) -> tuple[int, int]:
    """(1-based line, 1-based col) of `needle` in the file, plus offset."""
    for i, line in enumerate(path.read_text().split("\n"), start=1):
        j = line.find(needle)
        if j >= 0:
            return i, j + 1 + offset
    raise AssertionError(needle)


def text_at(path: Path, span: Span) -> str:
    return path.read_text().split("\n")[span.line - 1][span.col - 1: span.end_col - 1]


def test_detects_rule_folders_only(ws: Path):
    assert detect_rule_folders(ws) == [str(ws / "rules")]


def test_occurrences_roles_in_each_format(ws: Path):
    base = ws / "rules" / "base.toml"
    occ = occurrences(base.read_text(), str(base))
    defs = {(o.kind, o.name) for o in occ if o.role == DEF}
    assert ("symptom", "GPU_FELL_OFF") in defs and ("rule", "NcclWatchdog") in defs
    refs = [o for o in occ if o.role == REF and o.name == "GpuFellOff"]
    assert len(refs) == 1 and text_at(base, refs[0].span) == "GpuFellOff"
    py = ws / "rules" / "plugin.py"
    occ = occurrences(py.read_text(), str(py))
    assert {(o.kind, o.name) for o in occ if o.role == DEF} == {("symptom", "HOST_OOM"), ("rule", "DemoteHostOom")}
    assert all(text_at(py, o.span) == o.name for o in occ)
    rule = ws / "rules" / "extra.rule"
    occ = occurrences(rule.read_text(), str(rule))
    assert all(text_at(rule, o.span) == o.name for o in occ if o.role in (DEF, REF))


def test_analysis_equals_load_corpus(corpus: Corpus, ws: Path):
    from rulekit.rules.loader import load_corpus

    ref = load_corpus([ws / "rules"])
    assert [d.to_dict() for d in corpus.analyze().diagnostics] == [d.to_dict() for d in ref.diagnostics]


def test_incremental_edit_touches_only_that_file(corpus: Corpus, ws: Path):
    base, extra = str(ws / "rules" / "base.toml"), str(ws / "rules" / "extra.rule")
    before = corpus.files[extra].ruleset
    corpus.update(base, corpus.files[base].text.replace('"NCCL_TIMEOUT" }', '"NOPE" }'))
    assert corpus.files[extra].ruleset is before  # not re-parsed
    by_file = corpus.diagnostics_by_file()
    assert [d.code for d in by_file[base]] == ["RK203"]
    # the DSL filter that names NCCL_TIMEOUT still resolves (the symptom is registered)
    assert by_file[extra] == []


def test_hover_symptom_rule_regex_and_code(corpus: Corpus, ws: Path):
    base = ws / "rules" / "base.toml"
    h = hover.hover(corpus, str(base), *pos(base, '"GPU_FELL_OFF"', 2))
    assert "rank: 900" in h.markdown and "`GpuFellOff`" in h.markdown and "fell off the bus" in h.markdown
    h = hover.hover(corpus, str(base), *pos(base, '"NcclWatchdog"', 2))
    assert "extractor `NcclWatchdog`" in h.markdown and "requires: `GpuFellOff`" in h.markdown
    h = hover.hover(corpus, str(base), *pos(base, "fallen off"))
    assert "required literals" in h.markdown and "prefilter: key" in h.markdown
    py = ws / "rules" / "plugin.py"
    h = hover.hover(corpus, str(py), *pos(py, '"DemoteHostOom"', 2))
    assert "filter `DemoteHostOom`" in h.markdown and "stratum: STANDARD" in h.markdown
    assert hover.hover(corpus, str(base), 1, 1) is None


def test_definition_and_references_across_formats(corpus: Corpus, ws: Path):
    extra, base = ws / "rules" / "extra.rule", ws / "rules" / "base.toml"
    defs = navigation.definition(corpus, str(extra), *pos(extra, '"NCCL_TIMEOUT"', 3))
    assert len(defs) == 1 and defs[0].file == str(base) and text_at(base, defs[0]) == "NCCL_TIMEOUT"
    refs = navigation.references(corpus, str(base), *pos(base, 'name = "NCCL_TIMEOUT"', 9))
    files = sorted(Path(s.file).name for s in refs)
    assert files == ["base.toml", "base.toml", "base.toml", "extra.rule"]
    refs = navigation.references(corpus, str(base), *pos(base, 'name = "NCCL_TIMEOUT"', 9), include_declaration=False)
    assert len(refs) == 3


def test_rename_symptom_everywhere_including_python(corpus: Corpus, ws: Path):
    py = ws / "rules" / "plugin.py"
    edits = navigation.rename(corpus, str(py), *pos(py, '"HOST_OOM"', 2), "HOST_OOM_KILL")
    assert isinstance(edits, dict) and list(edits) == [str(py)]
    assert len(edits[str(py)]) == 3  # register_symptom, symptoms=(...), the demote set
    assert all(text_at(py, e.span) == "HOST_OOM" for e in edits[str(py)])
    assert navigation.rename(corpus, str(py), *pos(py, '"HOST_OOM"', 2), "GPU_FELL_OFF") == \
        "a symptom named `GPU_FELL_OFF` already exists"
    assert "not a valid" in navigation.rename(corpus, str(py), *pos(py, '"HOST_OOM"', 2), "bad name")


def test_completion_contexts(corpus: Corpus, ws: Path):
    base, extra = ws / "rules" / "base.toml", ws / "rules" / "extra.rule"
    text = base.read_text()

    def labels(path, text, needle, offset):
        lines = text.split("\n")
        ln = next(i for i, line in enumerate(lines, 1) if needle in line)
        col = lines[ln - 1].index(needle) + 1 + offset
        return {c.label for c in completion.complete(corpus, str(path), text, ln, col)}

    assert "GPU_FELL_OFF" in labels(base, text, 'symptom = "GPU', 11)
    assert labels(base, text, 'type = "bad_node"', 8) >= {"bad_node", "interesting_node", "bad_peers", "data"}
    assert "GpuFellOff" in labels(base, text, 'requires = ["', 13)
    t2 = text + "\n[[extractor]]\nma\n"
    lines = t2.split("\n")
    keys = {c.label for c in completion.complete(corpus, str(base), t2, len(lines) - 1, 3)}
    assert {"match_re", "emit", "name"} <= keys and "outcome" not in keys
    dsl = extra.read_text() + "\nfilter X \n"
    lines = dsl.split("\n")
    strata = {c.label for c in completion.complete(corpus, str(extra), dsl, len(lines) - 1, 10)}
    assert strata == {"EARLY", "MID", "STANDARD", "LATE"}
    kw = {c.label for c in completion.complete(corpus, str(extra), dsl + "ext", len(lines), 4)}
    assert "extractor" in kw


def test_completion_metric_rules_keys_and_metric_names(tmp_path: Path):
    """[[metric_rule]] / [[metric_rule.test]] / [[case.metric]] keys, the metric names the
    corpus watches (in a rule's `metric` and a case series' `name`), aggregates in `when`."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "m.toml").write_text(
        'author = "t"\n[[symptom]]\nname = "HOT"\noutcome = "hardware"\nsub_domain = "gpu"\nrank = 500\nblame = "node"\n'
        '[[metric_rule]]\nname = "gpu-hot"\nmetric = "DCGM_FI_DEV_GPU_TEMP"\nwhen = "value > 90"\n'
        'emit = { type = "interesting_node", symptom = "HOT" }\n')
    c = Corpus([rules])
    m = str((rules / "m.toml").resolve())

    def labels(text: str, line_text: str) -> set[str]:
        full = text + line_text
        lines = full.split("\n")
        return {e.label for e in completion.complete(c, m, full, len(lines), len(lines[-1]) + 1)}

    base = (rules / "m.toml").read_text()
    assert {"metric", "when", "window", "for", "labels", "emit", "test"} <= labels(base, "wi") | labels(base, "")
    assert "match_re" not in labels(base, "")
    assert labels(base, "[[metric_rule.test]]\n") >= {"samples", "expect", "symptom", "labels", "node"}
    assert {"metric_rule", "metric_rule.test", "case.metric"} <= labels(base, "[[met")
    assert labels(base, '[[metric_rule]]\nmetric = "DC') == {"DCGM_FI_DEV_GPU_TEMP"}
    assert labels(base, '[[metric_rule]]\nwhen = "') == {"value", "rate", "increase"}
    assert "DCGM_FI_DEV_GPU_TEMP" not in labels(base, '[[extractor]]\nname = "')  # not a metric context
    tests = str((rules / "m.test.toml").resolve())
    case = '[[case]]\nname = "c"\n[[case.metric]]\n'
    got = {e.label for e in completion.complete(c, tests, case, 4, 1)}
    assert got == {"node", "name", "labels", "samples"}
    got = {e.label for e in completion.complete(c, tests, case + 'name = "', 4, 9)}
    assert got == {"DCGM_FI_DEV_GPU_TEMP"}
    dsl = str((rules / "x.rule").resolve())
    assert "metric_rule" in {e.label for e in completion.complete(c, dsl, "met", 1, 4)}
    assert {e.label for e in completion.complete(c, dsl, '  metric "', 1, 11)} == {"DCGM_FI_DEV_GPU_TEMP"}


def test_document_and_workspace_symbols(corpus: Corpus, ws: Path):
    extra = ws / "rules" / "extra.rule"
    syms = symbols.document_symbols(corpus, str(extra))
    assert [(s.name, s.kind) for s in syms] == [("DATALOADER_KILLED", "symptom"), ("DataLoaderKilled", "rule"),
                                                ("DemoteTimeouts", "rule")]
    assert len(syms[1].children) == 2
    found = symbols.workspace_symbols([corpus], "oom")
    assert [s.name for s in found] == ["DemoteHostOom", "HOST_OOM"] or {s.name for s in found} == {"DemoteHostOom",
                                                                                                  "HOST_OOM"}


def test_code_action_register_missing_symptom(corpus: Corpus, ws: Path):
    base = str(ws / "rules" / "base.toml")
    new = corpus.files[base].text.replace('"NCCL_TIMEOUT" }', '"NEW_THING" }')
    corpus.update(base, new)
    d = [d for d in corpus.diagnostics_by_file()[base] if d.code == "RK203"][0]
    acts = editing.code_actions(corpus, base, d.span)
    assert [a.title for a in acts] == ["Register symptom `NEW_THING`"]
    (edit,) = acts[0].edits[base]
    fixed = new + edit.new_text
    corpus.update(base, fixed)
    assert corpus.diagnostics_by_file()[base] == []


def test_code_action_re2_rewrite(tmp_path: Path):
    shutil.copytree(FIX / "broken", tmp_path / "broken")
    c = Corpus([tmp_path / "broken"])
    a = str((tmp_path / "broken" / "a.toml").resolve())
    d = [d for d in c.diagnostics_by_file()[a] if d.code == "RK302" and "possessive" in d.message][0]
    (act,) = editing.code_actions(c, a, d.span)
    (e,) = act.edits[a]
    lines = c.files[a].text.split("\n")
    line = lines[e.span.line - 1]
    lines[e.span.line - 1] = line[: e.span.col - 1] + e.new_text + line[e.span.end_col - 1:]
    c.update(a, "\n".join(lines))
    assert "match_re = 'abc+ def'" in c.files[a].text
    assert not [d for d in c.diagnostics_by_file()[a] if "possessive" in d.message]
    # no safe rewrite for a lookahead: no action
    d = [d for d in c.diagnostics_by_file()[a] if d.code == "RK302"][0]
    assert editing.code_actions(c, a, d.span) == []


def test_code_action_witness_line_as_test(corpus: Corpus, ws: Path):
    base = str(ws / "rules" / "base.toml")
    line = "[Rank 0] Watchdog caught collective operation timeout GPU has fallen off the bus"
    d = Diagnostic("RK306", f"`GpuFellOff` and `NcclWatchdog` both match; witness: `{line}`",
                   Span(base, 20, 9, 20, 19), data={"rule": "GpuFellOff", "other": "NcclWatchdog", "witness": line})
    acts = editing.witness_actions(corpus, d)
    assert len(acts) == 2
    (e,) = acts[0].edits[base]
    text = corpus.files[base].text.split("\n")
    text.insert(e.span.line - 1, e.new_text.rstrip("\n"))
    corpus.update(base, "\n".join(text))
    rule = corpus.analyze().rules["GpuFellOff"]
    assert rule.tests[-1].line == line and rule.tests[-1].symptom == "GPU_FELL_OFF"


def test_code_lens_titles_follow_results(corpus: Corpus, ws: Path):
    base = str(ws / "rules" / "base.toml")
    titles = [x.title for x in lens.code_lenses(corpus, base, "file:///x")]
    assert titles == ["▶ Run all tests in file", "▶ Run 2 tests", "▶ Run 1 test"]
    corpus.update(base, corpus.files[base].text.replace('line = "GPU is fine"', 'line = "GPU has fallen off the bus"'))
    job = corpus.test_job([base])
    corpus.apply_tests(job, *job.run())
    titles = [x.title for x in lens.code_lenses(corpus, base, "file:///x")]
    assert titles == ["▶ Run all tests in file — 1 failed (2/3 passed)", "▶ Run 2 tests", "1 failed (1/2 passed)",
                      "▶ Run 1 test", "1/1 passed"]
    failing = [d for d in corpus.diagnostics_by_file()[base] if d.code == "RK401"]
    sp = failing[0].span
    assert len(failing) == 1
    assert corpus.files[base].text.split("\n")[sp.line - 1][sp.col - 1:].startswith('GPU has fallen off the bus"')


def test_semantic_tokens_dsl(corpus: Corpus, ws: Path):
    extra = str(ws / "rules" / "extra.rule")
    st = corpus.files[extra]
    toks = tokens.dsl_tokens(st.text, st.module)
    lines = st.text.split("\n")
    got = {(lines[t.line - 1][t.col - 1: t.col - 1 + t.length], t.type) for t in toks}
    assert ("extractor", "keyword") in got and ("DataLoaderKilled", "function") in got
    assert ("LATE", "enumMember") in got and ("bad_node", "type") in got and ("500", "number") in got
    assert any(t == "regexp" for _, t in got) and any(t == "comment" for _, t in got)
    enc = convert.semantic_tokens(toks, st.text)
    assert len(enc.data) == 5 * len(toks)


def test_inlay_hints_on_sample_log(corpus: Corpus, ws: Path):
    log = ws / "examples" / "job1" / "applog" / "train.log"
    assert inlay.is_sample_log(str(log), ("examples",))
    hints = inlay.inlay_hints(corpus, str(log), log.read_text())
    assert [(h.line, h.label) for h in hints] == [(2, "← NcclWatchdog (NCCL_TIMEOUT)"),
                                                  (4, "← DataLoaderKilled (DATALOADER_KILLED)")]
    syslog = ws / "examples" / "job1" / "syslog" / "node-02.log"
    assert [h.line for h in inlay.inlay_hints(corpus, str(syslog), syslog.read_text())] == [2]


def test_formatting_keeps_comments(ws: Path):
    extra = ws / "rules" / "extra.rule"
    messy = extra.read_text().replace("  rank 500", "      rank    500")
    (e,) = editing.format_document(str(extra), messy)
    assert e.new_text == extra.read_text() or "# Fixture corpus" in e.new_text
    assert editing.format_document(str(extra), "extractor {{{ broken") == []


def test_settings_defaults_and_problems():
    s, problems = parse_settings({"rulekit": {"debounceMs": 50, "ruleFolders": "rules", "lint": "yes", "bogus": 1}})
    assert s.debounce_ms == 50 and s.rule_folders == ("rules",) and s.lint is True
    assert len(problems) == 2 and any("lint" in p for p in problems) and any("bogus" in p for p in problems)
    assert parse_settings(None) == (Settings(), [])
    assert parse_settings([1, 2])[1]


def test_positions_utf16_round_trip():
    text = "a = '𝔘ü x'\nnext"
    # code-point column 8 (the space before `x`) follows a 2-unit astral char: UTF-16 column 8
    p = convert.to_position(text, 1, 8)
    assert (p.line, p.character) == (0, 8)
    assert convert.from_position(text, T.Position(line=0, character=8)) == (1, 8)
    assert convert.from_position(text, T.Position(line=9, character=99)) == (2, 5)


def test_unrelated_toml_outside_rule_folders_is_ignored(tmp_path: Path):
    w = Workspace()
    w.configure([str(tmp_path)])
    assert w.corpora == []
    py = tmp_path / "pyproject.toml"
    assert w.open(str(py), '[project]\nname = "x"\n') is None
    rules = tmp_path / "new" / "mine.toml"
    rules.parent.mkdir()
    text = '[[symptom]]\nname = "MY_UNUSED_SYMPTOM"\noutcome = "hardware"\nsub_domain = "gpu"\nrank = 1\nblame = "node"\n'
    rules.write_text(text)
    c = w.open(str(rules), text)
    assert c is not None and c.folders == [str(rules.parent)]
    assert [d.code for d in c.diagnostics_by_file()[str(rules)]] == ["RK205"]


@pytest.mark.parametrize("pattern, fixed", [
    (r"a(?>bc)d", r"a(?:bc)d"),
    (r"ab++c", r"ab+c"),
    (r"x\u00e9y", "x\u00e9y"),
    (r"ab{,3}c", r"ab{0,3}c"),
    (r"ab(?#note)c", r"abc"),
])
def test_re2_rewrites_are_safe_and_fix_the_pattern(tmp_path: Path, pattern: str, fixed: str):
    folder = tmp_path / "rules"
    folder.mkdir()
    f = folder / "r.toml"
    f.write_text('[[symptom]]\nname = "S"\noutcome = "hardware"\nsub_domain = "gpu"\nrank = 1\nblame = "node"\n\n'
                 f"[[extractor]]\nname = \"R\"\nauthor = \"t\"\nmatch_re = '{pattern}'\n"
                 'emit = { type = "bad_node", symptom = "S" }\n')
    c = Corpus([folder])
    path = str(f.resolve())
    (d,) = [d for d in c.diagnostics_by_file()[path] if d.code == "RK302"]
    (act,) = editing.code_actions(c, path, d.span)
    (e,) = act.edits[path]
    lines = c.files[path].text.split("\n")
    line = lines[e.span.line - 1]
    lines[e.span.line - 1] = line[: e.span.col - 1] + e.new_text + line[e.span.end_col - 1:]
    c.update(path, "\n".join(lines))
    assert f"match_re = '{fixed}'" in c.files[path].text
    assert not [d for d in c.diagnostics_by_file()[path] if d.code in ("RK301", "RK302")]


def test_formatting_toml_keeps_comments(ws: Path):
    base = ws / "rules" / "base.toml"
    messy = base.read_text().replace('name = "GPU_FELL_OFF"', 'name = "GPU_FELL_OFF"   ').replace(
        "[[symptom]]\nname = \"NCCL_TIMEOUT\"", "\n\n\n[[symptom]]\nname = \"NCCL_TIMEOUT\"")
    (e,) = editing.format_document(str(base), messy)
    assert e.new_text == base.read_text()
    assert e.new_text.startswith("# Fixture corpus")


def test_files_changed_on_disk(corpus: Corpus, ws: Path, tmp_path: Path):
    w = Workspace()
    w.configure([str(ws)])
    c = w.corpora[0]
    new = ws / "rules" / "more.toml"
    new.write_text('[[extractor]]\nname = "More"\nauthor = "t"\nmatch_re = \'more trouble\'\n'
                   'emit = { type = "bad_node", symptom = "NOT_THERE" }\n')
    assert w.disk_changed(str(new)) is c
    assert [d.code for d in c.diagnostics_by_file()[str(new)]] == ["RK203"]
    new.unlink()
    assert w.disk_changed(str(new), deleted=True) is c
    assert str(new) not in c.diagnostics_by_file()


def test_editing_a_pattern_does_not_grow_the_regex_cache_without_bound(corpus: Corpus, ws: Path):
    from rulekit.extract import regex

    base = str(ws / "rules" / "base.toml")
    text = corpus.files[base].text
    for i in range(2500):  # keystrokes inside a pattern: each is a new pattern
        corpus.update(base, text.replace("'GPU has fallen off the bus'", f"'GPU has fallen off the bus {i}'"))
        corpus.analyze()
    info = regex.compile_pattern.cache_info()
    assert info.maxsize is not None and info.currsize <= info.maxsize  # bounded: old patterns are evicted


def test_witness_actions_from_real_lint_findings():
    every = FIX.parent / "fixtures" / "every_check"
    if not (every / "lint").is_dir():
        pytest.skip("the every_check fixture is not there")
    pytest.importorskip("rulekit.analysis.lint")
    c = Corpus([every / "lint"], Settings(lint_config=str(every / "lint_settings.toml"),
                                          sample_log=str(every / "benign.log")))
    job = c.lint_job()
    c.apply_lint(job, job.run())
    overlaps = [(p, d) for p, ds in c.diagnostics_by_file().items() for d in ds if d.code in ("RK306", "RK307")]
    assert overlaps
    for path, d in overlaps:
        acts = editing.code_actions(c, path, d.span, {(d.code, d.message)})
        assert acts and all(a.diagnostic == d for a in acts)
        first = acts[0]
        assert "pins the winner" in first.title
        (target, (edit,)), = first.edits.items()
        assert d.data["witness"] in edit.new_text
        # applying it gives the winner's rule a test of the witness line that passes
        lines = c.files[target].text.split("\n")
        lines.insert(edit.span.line - 1, edit.new_text.rstrip("\n"))
        c.update(target, "\n".join(lines))
        name = first.title.split("`")[1]
        tj = c.test_job(rule=name)
        results, _ = tj.run()
        assert results[name][-1].passed, results[name][-1].mismatches
        c.update(target, "\n".join(lines[: edit.span.line - 1] + lines[edit.span.line:]))
        job = c.lint_job()  # the edit dropped the file's lint findings: lint again
        c.apply_lint(job, job.run())


@pytest.mark.parametrize("name,text", [
    ("r.toml", '[[symptom]]\nname = "S"\noutcome = "hardware"\nsub_domain = "gpu"\nrank = 1\ndocs = "d"\n\n'
               '[[extractor]]\nname = "R"\nauthor = "t"\nmatch_re = \'boom\'\nemit = { type = "bad_node", symptom = "S" }\n'),
    ("r.rule", 'symptom "S" { outcome hardware sub_domain gpu rank 1 }\n'
               'extractor R { match /boom/ emit bad_node "S" }\n'),
    ("r.py", 'from rulekit.plugin import register_symptom\n'
             'register_symptom("S", outcome="hardware", sub_domain="gpu", rank=1, docs="d")\n'),
])
def test_code_action_sets_a_missing_blame(tmp_path: Path, name: str, text: str):
    folder = tmp_path / "rules"
    folder.mkdir()
    f = folder / name
    f.write_text(text)
    c = Corpus([folder])
    p = str(f.resolve())
    (d,) = [d for d in c.diagnostics_by_file()[p] if d.code == "RK208"]
    acts = editing.code_actions(c, p, d.span)
    assert [a.title for a in acts][:3] == ["Set blame `node`", "Set blame `link`", "Set blame `peer`"]
    (e,) = acts[0].edits[p]
    lines = text.split("\n")
    ln = lines[e.span.line - 1]
    lines[e.span.line - 1] = ln[: e.span.col - 1] + e.new_text + ln[e.span.col - 1:]
    fixed = "\n".join(lines)
    assert 'blame = "node"' in fixed or "blame node" in fixed or 'blame="node"' in fixed
    f.write_text(fixed)
    c = Corpus([folder])
    assert not [d for d in c.diagnostics_by_file().get(p, []) if d.code in ("RK208", "RK101", "RK102")]


def test_a_file_not_open_is_read_once_while_unchanged(tmp_path: Path):
    """Publishing converts thousands of related places in files of context folders: their
    text is one object while the file is unchanged (the line split is kept per object),
    and a changed file is read again, even at the same size."""
    import os

    f = tmp_path / "ctx.toml"
    f.write_text("a = 1\n")
    w = Workspace()
    first = w.text_of(str(f))
    assert first == "a = 1\n" and w.text_of(str(f)) is first
    assert convert.to_position(w.text_of(str(f)), 1, 3) == T.Position(line=0, character=2)
    f.write_text("b = 2\n")  # same size
    st = os.stat(f)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert w.text_of(str(f)) == "b = 2\n"
    f.unlink()
    assert w.text_of(str(f)) is None


def test_an_edit_of_a_large_file_runs_its_tests_without_the_whole_scan_plan(tmp_path: Path, monkeypatch):
    """A file of many rules: its first test run builds the corpus's whole acceleration
    structure once (many tests to run); after an edit of one rule only that rule's tests
    run (the rest are cached), and a whole structure of a corpus of thousands of rules
    would cost seconds (a Hyperscan compile): it is not built again."""
    from rulekit.rules.corpus import RuleEngine

    rules = tmp_path / "rules"
    rules.mkdir()
    body = ['[[symptom]]\nname = "LARGE_FILE_SYMPTOM"\noutcome = "hardware"\nsub_domain = "gpu"\nrank = 500\n']
    for i in range(60):
        body.append(f'[[extractor]]\nname = "LargeFileRule{i}"\nmatch_re = \'widget{i:03d} failed\'\nsource = "syslog"\n'
                    f'emit = {{ type = "bad_node", symptom = "LARGE_FILE_SYMPTOM" }}\n'
                    f'[[extractor.test]]\nline = "widget{i:03d} failed"\nsymptom = "LARGE_FILE_SYMPTOM"\n')
    f = rules / "large.toml"
    f.write_text("\n".join(body))
    built: list[int] = []
    real = RuleEngine._build_plan
    monkeypatch.setattr(RuleEngine, "_build_plan", lambda self, *a: (built.append(1), real(self, *a))[1])
    w = Workspace()
    w.configure([str(tmp_path)], Settings(bundled=False))
    c = w.corpora[0]
    job = c.test_job([str(f)])
    c.apply_tests(job, *job.run())
    assert built and all(r.passed for rs in job.run()[0].values() for r in rs)
    built.clear()
    c.update(str(f), f.read_text().replace("widget007 failed'", "widget007 (?:failed|broke)'", 1))
    job = c.test_job([str(f)])
    results, _ = job.run()
    c.apply_tests(job, results, {})
    assert not built
    assert [r.passed for r in results["LargeFileRule7"]] == [True]
    # a file whose tests never ran, in a corpus with many more rules: its own tests only
    other = rules / "other.toml"
    other.write_text("\n".join(b.replace("LargeFileRule", "OtherFileRule").replace("widget", "gadget")
                               for b in body[1:]))
    big = Workspace()
    for extra in range(3):  # 180 more rules: 60 tests to run are fewer than half the corpus's 300
        (rules / f"more{extra}.toml").write_text("\n".join(b.replace("LargeFileRule", f"More{extra}Rule")
                                                           .replace("widget", f"thing{extra}") for b in body[1:]))
    big.configure([str(tmp_path)], Settings(bundled=False))
    c2 = big.corpora[0]
    job = c2.test_job([str(other)])
    results, _ = job.run()
    assert not built and len(results) == 60 and all(r.passed for rs in results.values() for r in rs)
