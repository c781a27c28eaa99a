"""What a warm load of a corpus reuses: the parsed DSL and TOML files, the
parsed job-test files, the plugins' bytecode and the corpus's validation
diagnostics, stored in `rulekit.extract.diskcache` under a key that hashes every
file a load can read (rule files, `common/` modules, job tests) with the code
fingerprint, so an edit anywhere makes a new key.

Plugins (`*.py`) are still executed on every load (they yield Python
callables), but from their cached bytecode: `plugin_code` hands back a code
object only when it was compiled by this interpreter (its bytecode magic) from
the very same text (a digest), else None and the loader compiles.  DSL ASTs are
compiled again (filters are closures); parsing (Lark's grammar analysis,
tomllib, catalog expansion) and validating every regex are what a cold start
pays for.  Used by `rulekit.rules.loader` only; it must not import the loader.
"""
from __future__ import annotations

import hashlib
import marshal
from dataclasses import field
from importlib.util import MAGIC_NUMBER
from types import CodeType
from pathlib import Path
from typing import Any, Sequence

from rulekit.rules.records import dataclass
import rulekit.extract.diskcache as cache

KIND = "corpus"
_SUFFIXES = (".py", ".toml", ".rule")


@dataclass
class CorpusCache:
    """One corpus's cache entry: DSL parse results by path and the final diagnostics."""

    key: str
    asts: dict[str, Any] = field(default_factory=dict)  # .rule path -> (Module, [Diagnostic])
    tomls: dict[str, Any] = field(default_factory=dict)  # .toml path -> (RuleSet, [Diagnostic])
    tests: dict[str, Any] = field(default_factory=dict)  # .test.toml path -> ([JobTestCase], [Diagnostic])
    codes: dict[str, tuple[bytes, bytes, bytes]] = field(default_factory=dict)  # .py path -> (magic, digest, marshal)
    diagnostics: list | None = None  # set on a hit: what validation said last time
    hit: bool = False
    base: Path | None = None  # the cache folder

    def store(self, diagnostics: list) -> None:
        cache.store(KIND, self.key, {"asts": self.asts, "tomls": self.tomls, "tests": self.tests, "codes": self.codes,
                                     "diagnostics": diagnostics}, self.base)

    def plugin_code(self, path: str, text: str) -> CodeType | None:
        """The cached code object of plugin `path` when compiled from exactly `text` by this
        Python; None otherwise (the caller compiles, then `keep_code`)."""
        got = self.codes.get(path)
        if not (isinstance(got, tuple) and len(got) == 3 and got[0] == MAGIC_NUMBER and got[1] == _digest(text)):
            return None
        try:
            code = marshal.loads(got[2])
        except (ValueError, EOFError, TypeError):
            return None
        return code if isinstance(code, CodeType) and code.co_filename == path else None

    def keep_code(self, path: str, text: str, code: CodeType) -> None:
        self.codes[path] = (MAGIC_NUMBER, _digest(text), marshal.dumps(code))


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


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
    if (isinstance(got, dict) and all(isinstance(got.get(k), dict) for k in ("asts", "tomls", "tests", "codes"))
            and isinstance(got.get("diagnostics"), list)):
        return CorpusCache(key, got["asts"], got["tomls"], got["tests"], got["codes"], got["diagnostics"], hit=True,
                           base=base)
    return CorpusCache(key, base=base)
