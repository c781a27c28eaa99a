"""Typed initialization options of the language server, with defaults.

`parse_settings(raw)` turns whatever the client sent (`initializationOptions`
or `workspace/didChangeConfiguration` settings, optionally under a "rulekit"
key) into a frozen `Settings` plus a list of problems; an invalid value keeps
its default and produces a problem message (shown to the user), never a
failure.  Pure: no I/O, no LSP types.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class Settings:
    # rule folders forming one corpus (absolute, or relative to the workspace root);
    # empty: every folder under the workspace root that holds rule files is its own corpus
    rule_folders: tuple[str, ...] = ()
    # delay between the last keystroke and re-analysis of a document
    debounce_ms: int = 200
    # run the inline tests of an edited file's rules in the background
    run_tests_on_change: bool = True
    # run lint (overlap, broad, weak key ...) after the document has been idle for lint_delay_ms
    lint: bool = True
    lint_delay_ms: int = 750
    # benign log sample for lint (None: the package's sample)
    sample_log: str | None = None
    # lint thresholds: a settings TOML as `rulekit lint --config` takes (None: the defaults)
    lint_config: str | None = None
    # folder names whose *.log files get "which rule matched" inlay hints
    example_folders: tuple[str, ...] = ("examples",)
    # time limit for importing each Python rule plugin (probed in a child process); 0: the default (10 s)
    plugin_timeout_ms: int = 10_000
    # template for codeDescription links ({code} is replaced); empty: no link
    code_docs_url: str = ""
    # the bundled rules under each rule folder (None: the project file's `bundled`, else true);
    # false: a folder is a corpus of its own
    bundled: bool | None = None
    # a job's log open in the editor: at most this many unexplained error lines get an RK640 (0: none)
    unexplained_max: int = 200
    # ... read up to this many MiB of the log (the rest is not read; an RK641 says so)
    log_max_mib: int = 64
    # a result store (`rulekit blueprint run --output sqlite:PATH`) for rule statistics in hover and
    # code lens (relative to the workspace root; None: the project file's `store`, else none)
    store: str | None = None
    # the statistics' window: the last N days of the store (0: the whole store)
    stats_window_days: int = 30


_ALIASES = {  # camelCase (what editors send) -> field name
    "ruleFolders": "rule_folders", "debounceMs": "debounce_ms", "runTestsOnChange": "run_tests_on_change",
    "lint": "lint", "lintDelayMs": "lint_delay_ms", "sampleLog": "sample_log", "lintConfig": "lint_config", "exampleFolders": "example_folders",
    "codeDocsUrl": "code_docs_url", "pluginTimeoutMs": "plugin_timeout_ms", "bundled": "bundled",
    "unexplainedMax": "unexplained_max", "logMaxMiB": "log_max_mib", "store": "store",
    "statsWindowDays": "stats_window_days",
}


def parse_settings(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Settings from a client's JSON value; problems for every value that was ignored."""
    settings = base or Settings()
    problems: list[str] = []
    if raw is None:
        return settings, problems
    if not isinstance(raw, dict):
        return settings, [f"rulekit settings must be an object, got {type(raw).__name__}; using defaults"]
    if isinstance(raw.get("rulekit"), dict):
        raw = raw["rulekit"]
    known = {f.name: f for f in fields(Settings)}
    changes: dict[str, Any] = {}
    for key, value in raw.items():
        name = _ALIASES.get(key, key)
        if name not in known:
            problems.append(f"unknown rulekit setting `{key}` (known: {', '.join(sorted(_ALIASES))})")
            continue
        default = getattr(Settings(), name)
        ok, conv = _convert(value, default, name)
        if ok:
            changes[name] = conv
        else:
            problems.append(f"rulekit setting `{key}`: {conv}; using the default {default!r}")
    return replace(settings, **changes), problems


def _convert(value: Any, default: Any, name: str) -> tuple[bool, Any]:
    if name == "bundled":
        return (True, value) if value is None or isinstance(value, bool) else (False, f"expected true/false, got {value!r}")
    if isinstance(default, bool):
        return (True, value) if isinstance(value, bool) else (False, f"expected true/false, got {value!r}")
    if isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 60_000:
            return True, value
        return False, f"expected an integer 0..60000, got {value!r}"
    if isinstance(default, tuple):
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return True, tuple(value)
        return False, f"expected a list of strings, got {value!r}"
    if name in ("sample_log", "lint_config", "store"):
        if value is None or isinstance(value, str):
            return True, value or None
        return False, f"expected a path string, got {value!r}"
    if isinstance(default, str):
        return (True, value) if isinstance(value, str) else (False, f"expected a string, got {value!r}")
    return False, "unsupported value"
