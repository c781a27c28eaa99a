"""The lint's memo of finished pair findings against the lint without it.

A re-lint (the language server's after every edit, `rulekit lint` from the memo on
disk) takes each candidate pair's finding from the memo when the two rules' content
is unchanged and searches only the others.  These tests hold it to the definition
(`lint_corpus(..., index=False)`, no memo): the same diagnostics in the same order,
data included, on the bundled corpus, on the tests' corpora and on a generated
vendor-style corpus, first and after edits; and an edit searches only the edited
rule's pairs."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rulekit.analysis import lint as lint_mod
from rulekit.analysis.settings import load_settings
from rulekit.rules.loader import bundled_rules_path, load_corpus
from test_lint_index import fresh, generated  # noqa: F401  (the same fixtures: a generated corpus, a new process's lint state)

TESTS = Path(__file__).resolve().parent
EVERY = TESTS / "fixtures" / "every_check"


def _exact(ds) -> list[dict]:
    """Everything a diagnostic says, in the order the lint returns them."""
    return [d.to_dict() for d in ds]


def _corpus(which: str, generated: Path, tmp_path: Path):
    """(rule paths, lint settings, sample, focus) of a corpus, copied where edits may go."""
    if which == "bundled":
        return [bundled_rules_path()], None, None, None
    if which == "every_check-lint":
        own = tmp_path / "lint"
        shutil.copytree(EVERY / "lint", own)
        config, _ = load_settings(str(EVERY / "lint_settings.toml"))
        return [own], config, (EVERY / "benign.log").read_bytes(), None
    src = TESTS / "lsp_fixtures" / "ws" / "rules" if which == "lsp-ws" else generated
    own = tmp_path / "own"
    shutil.copytree(src, own)
    # a folder of one's own over the bundled corpus, linted as `rulekit lint DIR` does
    return [bundled_rules_path(), own], None, None, str(own)


def _lint(paths, config, sample, focus, index=True) -> list:
    return lint_mod.lint_corpus(load_corpus(paths), sample, config, cost=False, index=index,
                                focus=(lambda f: f.startswith(focus)) if focus else None)


def _plain(e: dict) -> bool:
    emit = e.get("emit") or {}
    return ("match_re" in e and emit.get("type") not in (None, "data") and "{" not in str(emit.get("symptom", "{"))
            and not e.get("fallback"))


def _edit(paths: list, tmp_path: Path) -> Path:
    """Add an extractor that overlaps one of the corpus's own (its pattern with a wider
    tail): to the last rule file of the user's folder, or (the bundled corpus, never
    written) in a folder of its own added to `paths`."""
    import re
    import tomllib

    folder = Path(paths[-1])
    files = sorted(p for p in folder.glob("*.toml") if not p.name.endswith(".test.toml")
                   and any(_plain(e) for e in tomllib.loads(p.read_text()).get("extractor", [])))
    ex = next(e for e in tomllib.loads(files[-1].read_text())["extractor"] if _plain(e))
    if folder == Path(bundled_rules_path()):
        folder = tmp_path / "edit"
        folder.mkdir(exist_ok=True)
        f = folder / "edit.toml"
        f.write_text('author = "t"\n')
        paths.append(folder)
    else:
        f = files[-1]
    pattern = ex["match_re"] + "(?P<edit_tail>.*)"
    re.compile(pattern)
    extra = ("\n[[extractor]]\nname = \"EditedOverlap\"\nmatch_re = '''" + pattern + "'''\n"
             + (f"source = {ex['source']!r}\n".replace("'", '"') if isinstance(ex.get("source"), str) else "")
             + 'emit = { type = "bad_node", symptom = "' + ex["emit"]["symptom"] + '" }\n')
    f.write_text(f.read_text() + extra)
    return f


@pytest.mark.parametrize("which", ["bundled", "every_check-lint", "lsp-ws", "generated"])
def test_the_memo_of_findings_changes_no_finding_nor_their_order(which, generated, fresh, tmp_path):
    paths, config, sample, focus = _corpus(which, generated, tmp_path)
    first = _lint(paths, config, sample, focus)
    assert lint_mod._MEMO.table("findings")  # the memo was filled
    again = _lint(paths, config, sample, focus)  # every pair from the memo
    fresh()
    reference = _lint(paths, config, sample, focus, index=False)
    assert _exact(first) == _exact(reference) == _exact(again)
    if which in ("every_check-lint", "generated"):
        assert {"RK306", "RK307"} & {d.code for d in reference}
    # an edit, linted with the memo warm, then the edit undone
    f = _edit(paths, tmp_path)
    text_edited = f.read_text()
    edited = _lint(paths, config, sample, focus)
    assert any("EditedOverlap" in d.message for d in edited)
    fresh()
    assert _exact(edited) == _exact(_lint(paths, config, sample, focus, index=False))
    _lint(paths, config, sample, focus)
    f.write_text(text_edited.split("\n[[extractor]]\nname = \"EditedOverlap\"")[0])
    assert _exact(_lint(paths, config, sample, focus)) == _exact(reference)


def test_an_edit_finishes_only_the_edited_rules_pairs(generated, fresh, tmp_path, monkeypatch):
    paths, config, sample, focus = _corpus("generated", generated, tmp_path)
    _lint(paths, config, sample, focus)
    finished: list[tuple[str, str]] = []
    real = lint_mod._pair_finding

    def spy(a, b, *rest):
        finished.append((a.name, b.name))
        return real(a, b, *rest)

    monkeypatch.setattr(lint_mod, "_pair_finding", spy)
    assert _lint(paths, config, sample, focus) and finished == []  # nothing changed: nothing is finished again
    _edit(paths, tmp_path)
    after = _lint(paths, config, sample, focus)
    assert finished and all("EditedOverlap" in pair for pair in finished), finished
    assert any(d.code in ("RK306", "RK307") and "EditedOverlap" in d.message for d in after)


def test_a_changed_rank_or_real_line_is_not_taken_from_the_memo(fresh, tmp_path):
    """What decides a finding besides the patterns (the symptoms' ranks, a test line
    that one rule matches and the other does not) is part of its key."""
    own = tmp_path / "rules"
    own.mkdir()
    body = ('author = "t"\n'
            '[[symptom]]\nname = "WIDE_S"\noutcome = "hardware"\nsub_domain = "gpu"\nrank = @WIDE@\nblame = "node"\n'
            '[[symptom]]\nname = "NARROW_S"\noutcome = "hardware"\nsub_domain = "gpu"\nrank = 500\nblame = "node"\n'
            "[[extractor]]\nname = \"Wide\"\nmatch_re = 'link (?:down|flap)'\n"
            'emit = { type = "bad_node", symptom = "WIDE_S" }\n'
            '@TEST@'
            "[[extractor]]\nname = \"Narrow\"\nmatch_re = 'link down on port \\d+'\n"
            'emit = { type = "bad_node", symptom = "NARROW_S" }\n')
    f = own / "r.toml"
    variants = [dict(wide=900, test=""), dict(wide=100, test=""),
                dict(wide=100, test='[[extractor.test]]\nline = "link down on port 3"\nsymptom = "NARROW_S"\n')]
    for v in variants:
        f.write_text(body.replace("@WIDE@", str(v["wide"])).replace("@TEST@", v["test"]))
        warm = _lint([own], None, None, None)
        assert any(d.code in ("RK306", "RK307") for d in warm), warm
        cold_state = lint_mod._MEMO
        fresh()
        assert _exact(warm) == _exact(_lint([own], None, None, None, index=False)), v
        lint_mod._MEMO = cold_state  # keep the warm memo for the next variant (the fixture restores it)
