"""Shared fixtures: the bundled engine (loaded once) and a tiny-corpus builder."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import textwrap
from pathlib import Path

import pytest

# the compiled-corpus cache goes to a private folder per test session (exercised,
# never the user's ~/.cache); set before rulekit reads it
_CACHE = tempfile.mkdtemp(prefix="rulekit-test-cache-")
os.environ["RULEKIT_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)

from rulekit.rules.loader import load_corpus  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def bundled():
    res = load_corpus(None)
    assert res.engine is not None, "\n".join(str(d) for d in res.diagnostics if d.severity.value == "error")
    return res.engine


@pytest.fixture
def make_corpus(tmp_path):
    """make_corpus({"a.toml": "...", "b.py": "..."}) -> folder path (texts are dedented)."""

    def make(files: dict[str, str], name: str = "rules") -> Path:
        root = tmp_path / name
        for rel, text in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(textwrap.dedent(text).lstrip("\n"))
        return root

    return make


# Tests that fork worker processes (the chunk-parallel scan) run first: a fork is
# only safe while this process has one thread, and other tests leave threads behind
# (language servers, Dask clients, uvicorn in a thread).  Run later, they would skip.
FORK_FIRST = ("test_chunk_parallel.py",)


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.path.name not in FORK_FIRST)  # stable: order otherwise kept
