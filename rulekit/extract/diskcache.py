"""The on-disk cache of derived, deterministic data (compiled-corpus pieces,
scanner analysis), so a warm `rulekit attribute` does not redo them.

Where: `$RULEKIT_CACHE_DIR`, else `$XDG_CACHE_HOME/rulekit`, else
`~/.cache/rulekit` (a folder of mode 0700); `RULEKIT_CACHE_DIR=""` disables it.
An entry is one file `<kind>-<key>.pkl`: a header line (magic, kind, key, the
SHA-256 of the body) then the pickled body.  The key is a hash its caller makes
of *every* input (file bytes, and `code_fingerprint()`: the rulekit version and
the code that derives the data),
so a stale entry is never found.  A read checks the header and the digest
before unpickling and returns None on any mismatch or error (the caller
rebuilds and stores again): never trusted, never fatal.  Writes go to a
private temporary file renamed over the entry (atomic: concurrent writers of
the same key both write complete, equal files).  Only a few newest entries of
each kind are kept.  The folder comes from `rulekit.config` (`EngineOptions.cache_dir`,
passed as `base`; without it, what the environment says).  Imports nothing of rulekit
but that core module: every group above may use it.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

MAGIC = b"rulekit-cache-1"
KEEP_PER_KIND = 8


_ENV: Any = object()  # `base` not given: the folder the environment names


def cache_dir() -> Path | None:
    """The cache folder the environment names (not created here), or None when disabled."""
    from rulekit.config import default_cache_dir

    return default_cache_dir()


_CODE: str | None = None


def code_fingerprint() -> str:
    """The path, size and mtime of every source file of the package (and the DSL
    grammar).  This covers the rulekit version (`rulekit/__init__.py` holds it; an
    upgrade rewrites the files) and an edited source tree whose version number did
    not change: what older code derived is never reused.  ~2 ms (os.walk: pathlib's
    rglob took ~6 of every start); memoized."""
    global _CODE
    if _CODE is None:
        h = hashlib.sha256(MAGIC)
        pkg = Path(__file__).resolve().parents[1]
        files = [os.path.join(root, name) for root, _dirs, names in os.walk(pkg)
                 for name in names if name.endswith((".py", ".lark"))]
        files += [str(f) for f in pkg.parent.glob("grammar/*.lark")]
        for f in sorted(set(files)):
            try:
                st = os.stat(f)
                h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}\0".encode())
            except OSError:
                h.update(f"{f}:?\0".encode())
        _CODE = h.hexdigest()
    return _CODE


def make_key(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        b = p.encode("utf-8") if isinstance(p, str) else p
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()[:40]


def _path(kind: str, key: str, base: Any = _ENV) -> Path | None:
    d = cache_dir() if base is _ENV else base
    return Path(d) / f"{kind}-{key}.pkl" if d is not None else None


def load(kind: str, key: str, base: Any = _ENV) -> Any | None:
    """The cached body for (kind, key), or None (absent, disabled, corrupt, foreign).
    `base`: the cache folder (None: disabled); default: the environment's."""
    path = _path(kind, key, base)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            header = f.readline().split()
            body = f.read()
    except OSError:
        return None
    if (len(header) != 4 or header[0] != MAGIC or header[1] != kind.encode() or header[2] != key.encode()
            or header[3] != hashlib.sha256(body).hexdigest().encode()):
        return None
    try:
        return pickle.loads(body)
    except Exception:  # written by an incompatible build: rebuild
        return None


def store(kind: str, key: str, value: Any, base: Any = _ENV) -> bool:
    """Write an entry atomically; False when the cache is disabled or unwritable
    (the cache is an optimisation: failures are silent).  `base` as for `load`."""
    path = _path(kind, key, base)
    if path is None:
        return False
    try:
        body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=f".{kind}-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(b" ".join([MAGIC, kind.encode(), key.encode(), hashlib.sha256(body).hexdigest().encode()]))
                f.write(b"\n")
                f.write(body)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        _prune(path.parent, kind)
        return True
    except OSError:
        return False


def _prune(folder: Path, kind: str) -> None:
    try:
        entries = sorted(folder.glob(f"{kind}-*.pkl"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[KEEP_PER_KIND:]:
            old.unlink()
    except OSError:  # a concurrent pruner got there first
        pass
