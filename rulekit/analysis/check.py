"""`check`: load and validate a corpus (TOML, DSL, Python plugins) and return every
problem at once: syntax, schema, duplicate names (both locations), missing
dependencies, unregistered or unused symptoms, invalid or RE2-incompatible
regexes, bad priorities.  The validation itself lives in `rulekit.rules.loader` (one
pass, suppression comments applied); this module only shapes the answer the CLI
and the language server share.  Pure: no printing, no exit codes.
"""
from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Sequence

from rulekit.rules.records import dataclass
from rulekit.config import GlobalConfig
from rulekit.diagnostics import Diagnostic, Severity
from rulekit.rules.loader import LoadResult, load_corpus


@dataclass
class CheckReport:
    diagnostics: list[Diagnostic]
    load: LoadResult
    texts: dict[str, str] = field(default_factory=dict)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]

    @property
    def clean(self) -> bool:
        return not self.diagnostics

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Severity}
        for d in self.diagnostics:
            out[d.severity.value] += 1  # type: ignore[union-attr]
        return out


def check_paths(paths: Sequence[str | Path] | None = None, overlay: dict[str, str] | None = None,
                config: GlobalConfig | None = None) -> CheckReport:
    """Every problem of the corpus at `paths` (default: the bundled rules)."""
    res = load_corpus(list(paths) if paths else None, config=config, overlay=overlay)
    return CheckReport(sorted(res.diagnostics, key=Diagnostic.sort_key), res, res.texts)
