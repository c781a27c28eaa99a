"""The lint's pair index and screens against the definition they replace.

`rulekit lint` used to try every pair of extractors (`pairindex.static_pair`) and
scan the sample and the test lines in one piece; it now finds the pairs through an
index of their literals, drops pairs the overlap screens rule out, and scans only
what is new.  These tests compare the two on the bundled corpus and on generated
vendor-style corpora (bench/vendor_corpus.py): the same pairs, the same findings,
word for word; and after an edit, only the edited rule's pairs are searched."""
from __future__ import annotations

import importlib.util
import itertools
import shutil
import sys
from pathlib import Path

import pytest

from rulekit.analysis import lint as lint_mod
from rulekit.analysis import overlap as OV
from rulekit.analysis import overlap_screen as SC
from rulekit.analysis.pairindex import PairIndex, static_pair
from rulekit.rules.loader import bundled_rules_path, load_corpus

BENCH = Path(__file__).resolve().parent.parent / "bench" / "vendor_corpus.py"


def _generator():
    spec = importlib.util.spec_from_file_location("vendor_corpus_under_test", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (its dataclasses look their module up)
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules[spec.name]
    return mod


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    return _generator().generate(tmp_path_factory.mktemp("vendor") / "rules", 300, seed=11)


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A new process's lint state: empty memo, index and line hits, no disk cache."""
    monkeypatch.setenv("RULEKIT_CACHE_DIR", str(tmp_path / "cache"))

    def reset():
        monkeypatch.setattr(lint_mod, "_MEMO", lint_mod._Memo())
        monkeypatch.setattr(lint_mod, "_PAIRS", lint_mod._PairIndexes())
        monkeypatch.setattr(lint_mod, "_LINES", lint_mod._LineState())
        monkeypatch.setattr(lint_mod, "_saved_sizes", {})

    reset()
    return reset


def _sigs(load) -> list[tuple]:
    rules = [r for r in lint_mod._lint_rules(load) if lint_mod._evidence(r)]
    return list(dict.fromkeys(lint_mod._sig(r) for r in rules))


def _brute(sigs: list[tuple]) -> set[frozenset]:
    return {frozenset((a, b)) for i, a in enumerate(sigs) for b in sigs[i:]
            if static_pair(a, b, lint_mod._keys_of)}


def _indexed(index: PairIndex, sigs: list[tuple]) -> set[frozenset]:
    index.update(sigs)
    return {frozenset(p) for p in index.pairs(sigs)}


def _diags(ds) -> list[tuple]:
    return sorted((d.code, str(d.span), d.message, repr(sorted((d.data or {}).items())),
                   tuple(str(r.span) for r in d.related)) for d in ds)


@pytest.mark.parametrize("which", ["bundled", "generated"])
def test_the_index_finds_exactly_the_pairs_that_share_a_literal(which, generated, fresh):
    load = load_corpus([bundled_rules_path()] if which == "bundled" else [generated])
    sigs = _sigs(load)
    want = _brute(sigs)
    assert len(want) > 100
    # all at once, and grown in three steps (as edits and a second corpus grow it)
    assert _indexed(PairIndex(lint_mod._keys_of, lambda a, b: True, {}), sigs) == want
    table: dict = {}
    step = PairIndex(lint_mod._keys_of, lambda a, b: True, table)
    third = len(sigs) // 3
    _indexed(step, sigs[:third])
    _indexed(step, sigs[third:])
    assert _indexed(step, sigs) == want
    # an edit: one signature replaced by another; a fresh index over the new set agrees
    edited = [*sigs[1:], (sigs[0][0] + "(?: x)?", *sigs[0][1:])]
    assert _indexed(step, edited) == _brute(edited)
    assert step.update(edited) == 0  # nothing new the second time


def _static_pairs(load) -> list[tuple[str, str]]:
    sigs = _sigs(load)
    return sorted({(a[0], b[0]) for a, b in itertools.combinations(sigs, 2)
                   if a[0] != b[0] and static_pair(a, b, lint_mod._keys_of)})


@pytest.mark.parametrize("which", ["bundled", "generated"])
def test_the_screens_never_rule_out_an_overlap_the_exact_search_finds(which, generated):
    load = load_corpus([bundled_rules_path()] if which == "bundled" else [generated])
    nfas: dict[str, OV.NFA | None] = {}
    for a, b in _static_pairs(load):
        for p in (a, b):
            if p not in nfas:
                try:
                    nfas[p] = OV.compile_nfa(p, 40)
                except OV.Unsupported:
                    nfas[p] = None
    shapes = {p: SC.Shape(n) for p, n in nfas.items() if n is not None}
    found = ruled_out = 0
    for a, b in _static_pairs(load):
        if nfas[a] is None or nfas[b] is None:
            continue
        maybe = not SC.quick_disjoint(shapes[a], shapes[b]) and SC.may_overlap(shapes[a], shapes[b])
        ruled_out += not maybe
        res = OV.overlap(nfas[a], nfas[b], 4000, 40, 3)
        if res.found:
            found += 1
            assert maybe, (a, b, res.witness)
    assert found > 20 and ruled_out > found  # both sides are exercised


@pytest.mark.parametrize("which", ["bundled", "generated"])
def test_the_indexed_lint_says_what_the_definition_says(which, generated, fresh):
    paths = [bundled_rules_path()] if which == "bundled" else [generated]
    indexed = lint_mod.lint_corpus(load_corpus(paths), cost=False)
    again = lint_mod.lint_corpus(load_corpus(paths), cost=False)  # from the memo
    fresh()
    reference = lint_mod.lint_corpus(load_corpus(paths), cost=False, index=False)
    assert _diags(indexed) == _diags(reference) == _diags(again)
    if which == "generated":
        codes = {d.code for d in reference}
        assert {"RK306", "RK307"} <= codes, codes  # the generated corpus overlaps on purpose


def test_an_edit_searches_only_the_edited_rules_pairs(generated, fresh, tmp_path, monkeypatch):
    rules = tmp_path / "rules"
    shutil.copytree(generated, rules)
    lint_mod.lint_corpus(load_corpus([rules]), cost=False)
    f = sorted(rules.glob("vendor_0*.toml"))[1]
    text = f.read_text()
    old = next(ln for ln in text.splitlines() if ln.startswith("match_re = '") and "(?P<" in ln)
    new_pattern = old[len("match_re = '"):-1] + " (?:again|twice)"
    f.write_text(text.replace(old, f"match_re = '{new_pattern}'", 1))
    searched: list[tuple] = []
    real = lint_mod._memo_search

    def spy(kind, fn, *args):
        if args not in lint_mod._MEMO.table(kind):
            searched.append((kind, args[:2]))
        return real(kind, fn, *args)

    computed: list[int] = []
    real_update = PairIndex.update
    monkeypatch.setattr(lint_mod, "_memo_search", spy)
    monkeypatch.setattr(PairIndex, "update", lambda self, sigs, cp=None: computed.append(real_update(self, sigs, cp))
                        or computed[-1])
    after = lint_mod.lint_corpus(load_corpus([rules]), cost=False)
    assert computed == [1]  # the edited rule's signature only
    assert all(new_pattern in args for kind, args in searched if kind in ("overlap", "contains")), searched
    monkeypatch.setattr(lint_mod, "_memo_search", real)
    fresh()
    assert _diags(after) == _diags(lint_mod.lint_corpus(load_corpus([rules]), cost=False, index=False))


def test_the_memo_is_bounded_and_sheds_its_oldest_entries(monkeypatch):
    memo = lint_mod._Memo()
    monkeypatch.setattr(lint_mod._Memo, "LIMIT", 100)
    t = memo.table("overlap")
    for i in range(150):
        t[i] = i
    t = memo.table("overlap")
    assert len(t) == 75 and min(t) == 75  # the oldest went, the newest stayed
