"""Start-up of the Service, as the article says: load the catalog, run its
inline tests (extractor lines, metric-rule series) and its job tests, and say
whether they all pass.  `rulekit serve` refuses to start when one fails
(unless --allow-failing-tests); `GET /v1/health` reports the summary.

Also the corpus hash: sha256 over the loaded rule files' names and contents,
so two workers (or two deployments) can tell they serve the same rules.
Returns data; prints nothing.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Sequence

from rulekit.diagnostics import Severity
from rulekit.config import EngineOptions
from rulekit.rules.loader import LoadResult, load_corpus
from rulekit.analysis.testing import run_inline_tests, run_job_tests

MAX_LISTED_FAILURES = 20


class CorpusError(Exception):
    """The rules do not load; `diagnostics` says why."""

    def __init__(self, load: LoadResult):
        self.load = load
        errs = [d for d in load.diagnostics if d.severity is Severity.ERROR]
        super().__init__("; ".join(str(d) for d in errs[:5]) or "the corpus did not load")


def load_service_corpus(rules: Sequence[str] | None) -> tuple[Any, str, LoadResult]:
    """(engine, corpus hash, load result) or CorpusError."""
    load = load_corpus([Path(r) for r in rules] if rules else None, options=EngineOptions.from_env())
    if load.engine is None:
        raise CorpusError(load)
    return load.engine, corpus_hash(load), load


def corpus_hash(load: LoadResult) -> str:
    h = hashlib.sha256()
    for path, text in sorted(load.texts.items(), key=lambda kv: (Path(kv[0]).name, kv[0])):
        h.update(Path(path).name.encode() + b"\0" + hashlib.sha256(text.encode("utf-8", "surrogateescape")).digest())
    return h.hexdigest()


def self_test(engine: Any) -> dict[str, Any]:
    """Every inline and job test of the corpus -> a summary (counts, the first failures)."""
    results = run_inline_tests(engine) + run_job_tests(engine)
    failed = [r for r in results if not r.passed]
    kinds: dict[str, int] = {}
    for r in results:
        kinds[r.kind] = kinds.get(r.kind, 0) + 1
    return {
        "ok": not failed,
        "total": len(results),
        "passed": len(results) - len(failed),
        "failed": len(failed),
        "by_kind": kinds,
        "failures": [{"kind": r.kind, "name": r.name, "rule": r.rule, "where": str(r.span) if r.span else None,
                      "why": r.error or "; ".join(r.mismatches)} for r in failed[:MAX_LISTED_FAILURES]],
    }
