"""The lint memo is kept on disk (`rulekit.analysis.lint.save_memo` / `load_memo`,
through rulekit.extract.diskcache): a new process's first lint reuses the exact
overlap searches of an earlier one and says the same."""
from __future__ import annotations

import shutil
from pathlib import Path

from rulekit.analysis import lint as lint_mod
from rulekit.analysis import overlap as OV
from rulekit_lsp.workspace import Corpus

FIX = Path(__file__).parent / "lsp_fixtures"


def test_a_new_process_first_lint_reuses_the_memo_on_disk(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("RULEKIT_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(FIX / "ws", tmp_path / "ws")
    (tmp_path / "ws" / "rules" / "overlap.toml").write_text(
        'author = "t"\n[[extractor]]\nname = "Wide"\nmatch_re = \'GPU has fallen off\'\n'
        'emit = { type = "bad_node", symptom = "GPU_FELL_OFF" }\n')
    monkeypatch.setattr(lint_mod, "_MEMO", lint_mod._Memo())
    monkeypatch.setattr(lint_mod, "_PAIRS", lint_mod._PairIndexes())
    monkeypatch.setattr(lint_mod, "_LINES", lint_mod._LineState())
    monkeypatch.setattr(lint_mod, "_saved_sizes", {})
    calls = []
    for name in ("overlap", "contains", "shortest_line", "compile_nfa"):  # the exact searches and their NFAs
        real = getattr(OV, name)
        monkeypatch.setattr(OV, name, lambda *a, _real=real, _n=name, **k: calls.append(_n) or _real(*a, **k))

    def lint() -> list:
        job = Corpus([tmp_path / "ws" / "rules"]).lint_job()
        return sorted((d.code, str(d.span), d.message) for d in (job.run() or []))

    first = lint()
    assert any(code in ("RK306", "RK307") for code, _, _ in first), first
    searched = len(calls)
    assert searched > 0
    assert not lint_mod.save_memo()  # the job saved it already: nothing new
    assert list((tmp_path / "cache").glob("lint-memo-*.pkl"))
    # a new process: empty memo, then what the disk holds
    monkeypatch.setattr(lint_mod, "_MEMO", lint_mod._Memo())
    monkeypatch.setattr(lint_mod, "_PAIRS", lint_mod._PairIndexes())
    monkeypatch.setattr(lint_mod, "_LINES", lint_mod._LineState())
    monkeypatch.setattr(lint_mod, "_saved_sizes", {})
    assert lint_mod.load_memo() > 0
    calls.clear()
    assert lint() == first
    assert calls == []  # every exact search came from the disk, and no NFA was built for one


def test_a_corrupt_or_missing_memo_is_ignored(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("RULEKIT_CACHE_DIR", str(tmp_path / "cache"))
    assert lint_mod.load_memo() == 0
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / f"lint-memo-{lint_mod._memo_key()}.pkl").write_bytes(b"garbage\n\x00")
    assert lint_mod.load_memo() == 0
    monkeypatch.setenv("RULEKIT_CACHE_DIR", "")
    assert lint_mod.load_memo() == 0


def test_rulekit_lint_starts_from_the_memo_on_disk_and_leaves_it_there(tmp_path: Path, monkeypatch):
    """The command, not only the language server: a second `rulekit lint` (a new process:
    an empty memo) searches nothing again and says the same."""
    from typer.testing import CliRunner

    from rulekit.cli import app

    monkeypatch.setenv("RULEKIT_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(FIX / "ws", tmp_path / "ws")
    (tmp_path / "ws" / "rules" / "overlap.toml").write_text(
        'author = "t"\n[[extractor]]\nname = "Wide"\nmatch_re = \'GPU has fallen off\'\n'
        'emit = { type = "bad_node", symptom = "GPU_FELL_OFF" }\n')
    calls = []
    for name in ("overlap", "contains", "shortest_line"):
        real = getattr(OV, name)
        monkeypatch.setattr(OV, name, lambda *a, _real=real, _n=name, **k: calls.append(_n) or _real(*a, **k))
    outputs = []
    for _run in range(2):
        monkeypatch.setattr(lint_mod, "_MEMO", lint_mod._Memo())  # each run a new process's memo
        monkeypatch.setattr(lint_mod, "_PAIRS", lint_mod._PairIndexes())
        monkeypatch.setattr(lint_mod, "_LINES", lint_mod._LineState())
        monkeypatch.setattr(lint_mod, "_saved_sizes", {})
        calls.clear()
        r = CliRunner().invoke(app, ["lint", "--no-bundled", "--no-tests", "--no-cost", str(tmp_path / "ws" / "rules")])
        assert r.exit_code in (0, 1), r.output
        outputs.append((r.exit_code, r.output, len(calls)))
    assert "RK306" in outputs[0][1] or "RK307" in outputs[0][1], outputs[0][1]
    assert outputs[0][2] > 0 and list((tmp_path / "cache").glob("lint-memo-*.pkl"))
    assert outputs[1][:2] == outputs[0][:2]
    assert outputs[1][2] == 0  # every exact search came from the disk
