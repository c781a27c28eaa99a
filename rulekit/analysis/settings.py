"""Thresholds of the analyses: `defaults.toml` (the one data file of defaults),
optionally overridden by a user TOML file with the same tables.  Pure data; no
analysis here."""
from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from rulekit.diagnostics import Diagnostic, Span


def _defaults() -> dict[str, dict[str, Any]]:
    text = resources.files("rulekit.analysis").joinpath("defaults.toml").read_text("utf-8")
    return tomllib.loads(text)


DEFAULTS = _defaults()


def settings(overrides: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Defaults merged with `overrides` (table -> key -> value); unknown keys are ignored
    here and reported by `load_settings`."""
    out = {t: dict(v) for t, v in DEFAULTS.items()}
    for table, values in (overrides or {}).items():
        if table in out and isinstance(values, Mapping):
            out[table].update({k: v for k, v in values.items() if k in out[table]})
    return out


def load_settings(path: str | Path | None) -> tuple[dict[str, dict[str, Any]], list[Diagnostic]]:
    """Settings from a user file (or just the defaults); problems as RK109."""
    if path is None:
        return settings(), []
    p = Path(path)
    diags: list[Diagnostic] = []
    try:
        data = tomllib.loads(p.read_text("utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        return settings(), [Diagnostic("RK109", f"cannot read settings file `{p}`: {e}", Span(str(p)))]
    except tomllib.TOMLDecodeError as e:
        return settings(), [Diagnostic("RK109", f"settings file `{p}` is not valid TOML: {e}", Span(str(p)))]
    for table, values in data.items():
        if table not in DEFAULTS or not isinstance(values, dict):
            diags.append(Diagnostic("RK109", f"unknown settings table `{table}`; known: {', '.join(DEFAULTS)}", Span(str(p))))
            continue
        for k, v in values.items():
            if k not in DEFAULTS[table]:
                diags.append(Diagnostic("RK109", f"unknown setting `{table}.{k}`", Span(str(p))))
            elif type(v) is not type(DEFAULTS[table][k]) and not (
                    isinstance(v, int) and isinstance(DEFAULTS[table][k], float) and not isinstance(v, bool)):
                diags.append(Diagnostic("RK109", f"setting `{table}.{k}` must be a {type(DEFAULTS[table][k]).__name__}",
                                        Span(str(p))))
    return settings(data), diags
