"""Thresholds of the analyses: `defaults.toml` (the one data file of defaults),
optionally overridden by a user TOML file with the same tables.  Pure data; no
analysis here."""
from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from rulekit.diagnostics import Diagnostic, Span
from rulekit.rules.suggest import did_you_mean


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


def load_settings(path: str | Path | None,
                  project: Any = None) -> tuple[dict[str, dict[str, Any]], list[Diagnostic]]:
    """Settings from a user file (or just the defaults); problems as RK109.  Without a
    file, the `[lint]` / `[coverage]` tables of the project file (`project`: a
    `rulekit.rules.project.Project`), if it has them."""
    if path is None:
        tables = getattr(project, "analysis", None)
        if tables:
            return settings_from_tables(dict(tables), Path(project.file))
        return settings(), []
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text("utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        return settings(), [Diagnostic("RK109", f"cannot read settings file `{p}`: {e}", Span(str(p)))]
    except tomllib.TOMLDecodeError as e:
        return settings(), [Diagnostic("RK109", f"settings file `{p}` is not valid TOML: {e}", Span(str(p)))]
    return settings_from_tables(data, p)


def settings_from_tables(data: Mapping[str, Any], p: Path) -> tuple[dict[str, dict[str, Any]], list[Diagnostic]]:
    """Defaults overridden by `data` (table -> key -> value) read from file `p`; problems as RK109."""
    diags: list[Diagnostic] = []
    for table, values in data.items():
        if table not in DEFAULTS or not isinstance(values, dict):
            diags.append(Diagnostic("RK109", f"unknown settings table `{table}`{did_you_mean(table, DEFAULTS)}; known: "
                                    f"{', '.join(DEFAULTS)}", Span(str(p))))
            continue
        for k, v in values.items():
            if k not in DEFAULTS[table]:
                diags.append(Diagnostic("RK109", f"unknown setting `{table}.{k}`{did_you_mean(k, DEFAULTS[table])}",
                                        Span(str(p))))
            elif type(v) is not type(DEFAULTS[table][k]) and not (
                    isinstance(v, int) and isinstance(DEFAULTS[table][k], float) and not isinstance(v, bool)):
                diags.append(Diagnostic("RK109", f"setting `{table}.{k}` must be a {type(DEFAULTS[table][k]).__name__}",
                                        Span(str(p))))
    return settings(data), diags
