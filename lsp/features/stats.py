"""Rules judged by production, in the editor: with a result store configured (the `store`
setting, else the project file's `store`), a rule's hover and a code lens on its
definition show the attempts it fired in, how often it was the root cause and the
precision operators' feedback gives it, over the last `statsWindowDays` days.

The numbers are `rulekit.analysis.storestats.rule_stats` (what `rulekit rules stats --db`
prints), read read-only with a wait for a writer's lock and a time budget, and kept
until the store file changes (size or modification time) or `REFRESH_S` pass.  A store
that cannot be read is a `StoreReadError` whose sentence the server shows once (RK642);
hover then says the numbers are unavailable and why, the lens shows nothing.
Pure but for reading the store; no LSP types.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any

from rulekit.analysis.storestats import StoreReadError, read_rule_stats
from rulekit.diagnostics import Span
from rulekit_lsp.features import Lens

REFRESH_S = 30.0  # numbers older than this are read again even if the file looks unchanged
DAY = 86400.0


class StoreStats:
    """The statistics of one store over a trailing window, cached by the file's state."""

    def __init__(self, path: str, window_days: int, budget_ms: int = 3000) -> None:
        self.path = path
        self.window_days = window_days
        self.budget_ms = budget_ms
        self._lock = threading.Lock()
        self._key: tuple | None = None
        self._at = 0.0
        self.data: dict[str, Any] | None = None
        self.by_rule: dict[str, dict[str, Any]] = {}
        self.problem: str | None = None

    def _file_key(self) -> tuple:
        try:
            st = os.stat(self.path)
        except OSError:
            return (None,)
        wal = self.path + "-wal"
        wst = os.stat(wal) if os.path.exists(wal) else None
        return (st.st_mtime_ns, st.st_size, wst.st_mtime_ns if wst else None, wst.st_size if wst else None)

    def fresh(self) -> bool:
        return self._key is not None and self._key == self._file_key() and time.monotonic() - self._at < REFRESH_S

    def refresh(self, now: float | None = None) -> "StoreStats":
        """Read the numbers again unless they are fresh (call off the event loop: it reads the store)."""
        with self._lock:
            if self.fresh():
                return self
            key = self._file_key()
            now = time.time() if now is None else now
            since = now - self.window_days * DAY if self.window_days else None
            try:
                self.data = read_rule_stats(self.path, since, None, budget_ms=self.budget_ms)
                self.by_rule = {d["rule"]: d for d in self.data["rules"]}
                self.problem = None
            except StoreReadError as e:
                self.data, self.by_rule, self.problem = None, {}, str(e)
            except Exception as e:  # noqa: BLE001 - a store that breaks the query is a problem, never a crash
                self.data, self.by_rule, self.problem = None, {}, f"{self.path}: cannot be read ({e})"
            self._key, self._at = key, time.monotonic()
            return self

    def of(self, name: str) -> dict[str, Any] | None:
        """The numbers of a rule, or of a rule group (summed over its expanded members)."""
        d = self.by_rule.get(name)
        if d is not None:
            return d
        members = [v for k, v in self.by_rule.items() if k.startswith(name + ".") or k.startswith(name + "[")]
        if not members:
            return None
        out = {"rule": name, "fired": 0, "root": 0, "confirmed": 0, "wrong": 0, "members": len(members)}
        for m in members:
            for k in ("fired", "root", "confirmed", "wrong"):
                out[k] += m[k]
        judged = out["confirmed"] + out["wrong"]
        out["precision"] = round(out["confirmed"] / judged, 3) if judged else None
        return out

    @property
    def window(self) -> str:
        return f"last {self.window_days} d" if self.window_days else "whole store"

    @property
    def attempts(self) -> int:
        return int(self.data["attempts"]) if self.data else 0


def _precision(d: dict[str, Any]) -> str:
    judged = d["confirmed"] + d["wrong"]
    if not judged:
        return "no feedback"
    return f"precision {d['precision']:.0%} ({d['confirmed']}/{judged} confirmed)"


def line(stats: StoreStats, name: str) -> str:
    """The lens's one line for a rule."""
    d = stats.of(name)
    if d is None:
        return f"production: fired in 0/{stats.attempts} attempts ({stats.window})"
    return (f"production: fired in {d['fired']}/{stats.attempts} attempts · root cause in {d['root']} · "
            f"{_precision(d)} ({stats.window})")


def markdown(stats: StoreStats, name: str) -> str:
    """The hover's section for a rule."""
    if stats.problem:
        return f"**in production**: unavailable — {stats.problem}"
    d = stats.of(name) or {"fired": 0, "root": 0, "confirmed": 0, "wrong": 0, "precision": None}
    head = f"**in production** ({stats.window}, {stats.attempts} attempt(s) in `{os.path.basename(stats.path)}`)"
    out = [head, "", f"- fired in {d['fired']} attempt(s)", f"- root cause in {d['root']}",
           f"- feedback: {_precision(d)}" + (f", {d['wrong']} wrong" if d["wrong"] else "")]
    if d.get("members"):
        out.append(f"- summed over {d['members']} expanded rule(s)")
    return "\n".join(out)


def lenses(stats: StoreStats, rules: list[Any], path: str) -> list[Lens]:
    """One lens per rule defined in `path` (at its definition), with its one line."""
    if stats.problem or stats.data is None:
        return []
    seen: set[tuple[int, int]] = set()
    out = []
    for r in rules:
        span = getattr(r, "span", None)
        if span is None or span.file != path:
            continue
        origin = getattr(r, "origin", None)
        name = origin.split(":", 1)[1].split("[")[0] if origin and ":" in origin else r.name
        if (span.line, span.col) in seen:
            continue
        seen.add((span.line, span.col))
        out.append(Lens(Span(path, span.line, span.col, span.line, span.col), line(stats, name)))
    return out
