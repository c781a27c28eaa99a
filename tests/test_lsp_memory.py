"""The language server's memory stays bounded (`rulekit_lsp.memory.trim`): the
compiled-pattern cache that validating a corpus fills is dropped once large, and
analysis, diagnostics and tests are the same afterwards."""
from __future__ import annotations

import shutil
from pathlib import Path

from rulekit.extract.regex import compile_pattern
from rulekit.rules.loader import bundled_rules_path
from rulekit_lsp import memory
from rulekit_lsp.workspace import Corpus


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_trim_drops_a_large_pattern_cache_and_nothing_else(tmp_path: Path, monkeypatch):
    from rulekit.extract import regex

    monkeypatch.setattr(memory, "KEEP", 100)
    shutil.copytree(bundled_rules_path(), tmp_path / "R")
    regex._check_pattern.cache_clear()  # validation then compiles every pattern again
    compile_pattern.cache_clear()
    c = Corpus([tmp_path / "R"])
    before = {p: sorted((d.code, str(d.span), d.message) for d in ds) for p, ds in c.diagnostics_by_file().items()}
    assert compile_pattern.cache_info().currsize > memory.KEEP  # validation compiled every pattern
    assert memory.trim()
    assert compile_pattern.cache_info().currsize == 0
    assert not memory.trim()  # small: left alone
    first = next(p for p in c.files if p.endswith("nccl.toml"))
    c.update(first, c.files[first].text + "\n# edit\n")
    after = {p: sorted((d.code, str(d.span), d.message) for d in ds) for p, ds in c.diagnostics_by_file().items()}
    assert after == before
    job = c.test_job(paths=[first], jobs=True)
    results, cache = job.run()
    assert results and all(r.passed for rs in results.values() for r in rs)


def test_trim_returns_memory_at_5000_rules(tmp_path: Path):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from lsp_latency import generate_corpus

    from rulekit.extract import regex

    folder = generate_corpus(tmp_path / "big", 3000)
    regex._check_pattern.cache_clear()
    compile_pattern.cache_clear()
    memory.trim(force=True)
    base = _rss_mb()
    c = Corpus([folder])
    c.diagnostics_by_file()
    grown = _rss_mb() - base
    memory.trim()
    kept = _rss_mb() - base
    assert grown > 40 and kept < grown / 2, (grown, kept)
