"""`--watch` for `check` and `test`: run once, then again whenever a watched file
changes (poll-based: sizes and modification times, every 0.5 s), until Ctrl-C.

Watched: every file under the given rule folders (rule files, `common/`
helpers, `*.test.toml`) and, for `test`, the example job folders.  Each run
reloads the corpus from scratch (plugins included), exactly as a fresh command
would.  `RULEKIT_WATCH_MAX_RUNS=N` stops after N runs (scripts and tests).
Exit status: the last run's.  Knows nothing about what the runs do.
"""
from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable

import typer

SKIP = {".git", ".venv", "venv", "__pycache__", "node_modules", ".pytest_cache", ".mypy_cache"}
POLL_SECONDS = 0.5
MAX_FILES = 50_000


def snapshot(roots: Iterable[Path]) -> dict[str, tuple[int, int]]:
    """path -> (mtime_ns, size) of every file under roots (a file root is itself)."""
    out: dict[str, tuple[int, int]] = {}
    for root in roots:
        if root.is_file():
            _stat_into(out, root)
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP)
            for fn in filenames:
                _stat_into(out, Path(dirpath) / fn)
                if len(out) >= MAX_FILES:
                    return out
    return out


def _stat_into(out: dict[str, tuple[int, int]], p: Path) -> None:
    try:
        st = p.stat()
    except OSError:
        return
    out[str(p)] = (st.st_mtime_ns, st.st_size)


def changed(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def _run(once: Callable[[], None]) -> int:
    try:
        once()
    except typer.Exit as e:  # typer.Exit
        return e.exit_code
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 1
    return 0


def watch_loop(roots: Iterable[Path], once: Callable[[], None], what: str = "rules",
               poll: float = POLL_SECONDS) -> None:
    """Run `once` (a command body that ends with typer.Exit), then on every change."""
    roots = [Path(r) for r in roots]
    limit = int(os.environ.get("RULEKIT_WATCH_MAX_RUNS", "0") or 0)
    runs = 0
    code = 0
    state = snapshot(roots)
    try:
        while True:
            code = _run(once)
            runs += 1
            sys.stdout.flush()
            if limit and runs >= limit:
                break
            _note(f"watching {len(state)} files of the {what} for changes (Ctrl-C to stop)")
            while True:
                time.sleep(poll)
                now = snapshot(roots)
                moved = changed(state, now)
                if moved:
                    state = now
                    shown = ", ".join(Path(p).name for p in moved[:3]) + (f" and {len(moved) - 3} more" if len(moved) > 3 else "")
                    _note(f"{datetime.now():%H:%M:%S} changed: {shown}; running again")
                    break
    except KeyboardInterrupt:
        _note("stopped watching")
    raise typer.Exit(code)


def _note(msg: str) -> None:
    print(f"-- {msg}", file=sys.stderr, flush=True)
