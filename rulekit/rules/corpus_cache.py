"""What a warm load of a corpus reuses: the parsed DSL and TOML files and the
corpus's validation diagnostics, stored in `rulekit.extract.diskcache` under a
key that hashes every file a load can read (rule files, `common/` modules, job
tests) with the code fingerprint, so an edit anywhere makes a new key.

Plugins (`*.py`) are still executed on every load (they yield Python
callables), and DSL ASTs are compiled again (filters are closures); parsing
(Lark's grammar analysis, tomllib, catalog expansion) and validating every
regex are what a cold start pays for.  Used by
`rulekit.rules.loader` only; it must not import the loader.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import rulekit.extract.diskcache as cache

KIND = "corpus"
_SUFFIXES = (".py", ".toml", ".rule")


@dataclass
class CorpusCache:
    """One corpus's cache entry: DSL parse results by path and the final diagnostics."""

    key: str
    asts: dict[str, Any] = field(default_factory=dict)  # .rule path -> (Module, [Diagnostic])
    tomls: dict[str, Any] = field(default_factory=dict)  # .toml path -> (RuleSet, [Diagnostic])
    diagnostics: list | None = None  # set on a hit: what validation said last time
    hit: bool = False
    base: Path | None = None  # the cache folder

    def store(self, diagnostics: list) -> None:
        cache.store(KIND, self.key, {"asts": self.asts, "tomls": self.tomls, "diagnostics": diagnostics}, self.base)


def corpus_files(paths: Sequence[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.suffix in _SUFFIXES and f.is_file()
                              and "__pycache__" not in f.parts))
    return out


def open_cache(paths: Sequence[Path], base: Path | None) -> CorpusCache | None:
    """The cache entry for these rule paths in the cache folder `base` (hit or empty),
    None when caching is off (`base` None: `EngineOptions.cache_dir`)."""
    if base is None:
        return None
    parts: list[bytes | str] = [cache.code_fingerprint()]
    for f in corpus_files(paths):
        try:
            data = f.read_bytes()
        except OSError:
            return None  # the loader reports it; do not cache a load that cannot read
        parts += [str(f), str(f.resolve()), data]  # as given too: diagnostics' spans name files so
    parts += [str(p) for p in paths]
    key = cache.make_key(*parts)
    got = cache.load(KIND, key, base)
    if (isinstance(got, dict) and isinstance(got.get("asts"), dict) and isinstance(got.get("tomls"), dict)
            and isinstance(got.get("diagnostics"), list)):
        return CorpusCache(key, got["asts"], got["tomls"], got["diagnostics"], hit=True, base=base)
    return CorpusCache(key, base=base)
