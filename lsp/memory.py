"""Keeping the language server's memory bounded over a long session.

Most of the server's memory at 5,000 rules is compiled RE2 patterns: validating
a corpus compiles every pattern once (`rulekit.extract.regex.compile_pattern`,
an LRU of up to 16,384), and a test run compiles the patterns of the rules it
tests.  The server needs none of them between runs (the validation results are
memoized separately, by pattern text), so `trim()` drops that cache once it holds
more than `KEEP` patterns and hands the freed heap back to the system (glibc's
`malloc_trim`; elsewhere a no-op): 5,000 generated rules, 212 -> 87 MB after the
load, 647 -> 127 MB after running every test (measured in `bench/lsp_latency.py`).

Must not: touch analysis results, run on the event loop's hot path (the server
calls it after publishes, not before).
"""
from __future__ import annotations

import ctypes
import ctypes.util

KEEP = 1000  # compiled patterns kept (a few files' worth): below this, trimming is not worth it

_libc = None


def _malloc_trim() -> None:
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _libc.malloc_trim  # noqa: B018 - glibc only
        except (OSError, AttributeError):
            _libc = False
    if _libc:
        _libc.malloc_trim(0)


def trim(force: bool = False) -> bool:
    """Drop the compiled-pattern cache when it holds more than KEEP patterns (or
    `force`), and return the freed memory; True when it did."""
    from rulekit.extract.regex import compile_pattern

    if not force and compile_pattern.cache_info().currsize <= KEEP:
        return False
    compile_pattern.cache_clear()
    _malloc_trim()
    return True
