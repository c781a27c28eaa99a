"""Whether a log line reads as an error, and which component it comes from.

The one place this notion lives: the data is `rulekit/data/error_lines.toml` (level
words, error cues, benign spans and lines, the component vocabulary); this module
reads it once and answers `reads_as_error(line, source)` with an `ErrorLine` (the cue
that made it an error, the component it names) or None.  The bundled corpus's
generic fallback (`bundled_rules/error_lines.py`) gates on `vocabulary().trigger`
(RE2) and calls this on the lines the gate lets through; a tool that looks for error
lines no rule explains calls the same function.

A line reads as an error when its first level word is an error level (`ERROR`,
`FATAL`, glog `E`/`F`, syslog `err`), when NCCL printed it as a `WARN`, or, without a
level word, when an error cue (an error word, an exception's final line, a C library
error message, a kernel oops) remains after the benign spans (counters such as
`errors=0`, flags such as `--on-error`, negations, advice lines) are blanked.  A line
whose first level word is INFO, DEBUG or WARNING is never an error; neither is a
Python frame, a quoted source line or a caret marker.  Pure functions of the line and
the data; bounded work per line (the first `MAX_CHARS` characters are read); no I/O
but reading the packaged data file once.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping

from rulekit.extract.literals import factors_of

MAX_CHARS = 2000  # characters of a line looked at (a 10 MB line costs what its start costs)
LEVEL_HEAD = 120  # where the line's level word is looked for
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# launcher rank prefixes: `[rank3]: `, `[default3]:`, `3: ` (srun -l), `[1,3]<stderr>:` (mpirun), Ray actors
_RANK = re.compile(r"^\s{0,8}(?:\[(?:rank|default)\d+\]:\s?|\d+: |\[\d+,\d+\]<std(?:out|err)>:\s?|"
                   r"\([\w.:-]+(?: pid=\d+)?(?:, ip=[\d.]+)?\) )")


class _Gated:
    """A compiled pattern and the literals one of which every match holds (its first
    required factor, `rulekit.extract.literals`, lower-cased): the pattern is tried
    only on a line whose lower-cased text holds one (most lines hold none)."""

    __slots__ = ("pattern", "literals")

    def __init__(self, text: str, flags: int = 0):
        self.pattern = re.compile(text, flags)
        try:
            factors = factors_of(text)
        except Exception:  # noqa: BLE001 - a pattern the analysis cannot read is tried on every line
            factors = None
        lits = sorted(factors[0]) if factors else None
        # the literals as one alternation (searched at C speed on the lower-cased line)
        self.literals = re.compile("|".join(re.escape(b.decode("utf-8", "replace")) for b in lits)) if lits else None

    def search(self, text: str, low: str) -> "re.Match[str] | None":
        if self.literals is not None and self.literals.search(low) is None:
            return None
        return self.pattern.search(text)

    def sub(self, repl: Any, text: str, low: str) -> str:
        if self.literals is not None and self.literals.search(low) is None:
            return text
        return self.pattern.sub(repl, text)


@dataclass(frozen=True)
class Component:
    """One row of the component vocabulary: what an unexplained error line from it becomes."""

    name: str
    symptom: str
    outcome: str
    sub_domain: str
    blame: str
    action: str | None = None
    docs: str = ""
    pattern: _Gated | None = None  # None: a source's default row
    default_for: tuple[str, ...] = ()


@dataclass(frozen=True)
class ErrorLine:
    """What made a line read as an error (`cue`: level, nccl, exception, strerror, kernel,
    word; `text`: the matched text) and the component it names."""

    cue: str
    text: str
    component: Component


class Vocabulary:
    """The error-line data, compiled: `reads_as_error`, `component_of`, and the RE2
    `trigger` every error line matches (the fallback's gate)."""

    def __init__(self, data: Mapping[str, Any]):
        self.trigger: str = data["trigger"]
        levels, cues, benign = data["levels"], data["cues"], data["benign"]
        self._benign_level = _Gated(levels["benign"])
        self._error_level = _Gated(levels["error"])
        self._always = _Gated(levels["error_always"])
        self._cues = [(name, _Gated(cues[name])) for name in ("kernel", "exception", "strerror", "words")]
        self._spans = [_Gated(p) for p in benign["spans"]]
        self._lines = [_Gated(p) for p in benign["lines"]]
        comps = []
        for row in data["component"]:
            comps.append(Component(
                name=row["name"], symptom=row["symptom"], outcome=row["outcome"], sub_domain=row["sub_domain"],
                blame=row["blame"], action=row.get("action"), docs=row.get("docs", ""),
                pattern=_Gated(row["pattern"]) if "pattern" in row else None,
                default_for=tuple(row.get("default_for", ()))))
        self.components: tuple[Component, ...] = tuple(comps)
        self._matchers = [c for c in comps if c.pattern is not None]
        self._defaults = {s: c for c in comps for s in c.default_for}
        self._fallback = next(c for c in comps if c.pattern is None)

    @classmethod
    def from_toml(cls, text: str) -> "Vocabulary":
        return cls(tomllib.loads(text))

    def symptoms(self) -> dict[str, Component]:
        """Symptom name -> the first row naming it (rows may share a symptom)."""
        out: dict[str, Component] = {}
        for c in self.components:
            out.setdefault(c.symptom, c)
        return out

    def component_of(self, line: str, source: str = "applog") -> Component:
        """The first row whose pattern the line holds, else the source's default row."""
        text = _clean(line)
        low = text.lower()
        for c in self._matchers:
            if c.pattern.search(text, low):  # type: ignore[union-attr]
                return c
        return self._defaults.get(source, self._fallback)

    def reads_as_error(self, line: str, source: str = "applog") -> ErrorLine | None:
        """An `ErrorLine` when `line` reads as an error, else None."""
        text = _clean(line)
        low = text.lower()
        m = self._always.search(text, low)
        if m is None:
            head, lhead = text[:LEVEL_HEAD], low[:LEVEL_HEAD]
            good = self._benign_level.search(head, lhead)
            if good is not None:  # (blanking spans never removes a benign level word: decided without it)
                bad = self._error_level.search(head[:good.start() + 1], lhead[:good.start() + 1])
                if bad is None or good.start() <= bad.start():
                    return None
        if not text.strip() or any(p.search(text, low) for p in self._lines):
            return None
        if m is not None:
            return ErrorLine("nccl", m.group(0), self.component_of(text, source))
        blanked = text
        for p in self._spans:
            blanked = p.sub(_blank, blanked, low)
        low = blanked.lower()
        head, lhead = blanked[:LEVEL_HEAD], low[:LEVEL_HEAD]
        good, bad = self._benign_level.search(head, lhead), self._error_level.search(head, lhead)
        if good is not None and (bad is None or good.start() <= bad.start()):
            return None
        if bad is not None:
            return ErrorLine("level", bad.group(0).strip(" [](<>:|\"',"), self.component_of(text, source))
        for name, p in self._cues:
            m = p.search(blanked, low)
            if m is not None:
                return ErrorLine(name, m.group(0).strip(), self.component_of(text, source))
        return None


def _blank(m: re.Match[str]) -> str:
    return " " * (m.end() - m.start())


def _clean(line: str) -> str:
    """The line's first MAX_CHARS characters, without ANSI colours, a trailing newline and
    a launcher rank prefix."""
    text = line[:MAX_CHARS]
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    text = text.rstrip("\r\n")
    m = _RANK.match(text)
    return text[m.end():] if m is not None else text


@lru_cache(maxsize=1)
def vocabulary() -> Vocabulary:
    """The packaged vocabulary (`rulekit/data/error_lines.toml`)."""
    return Vocabulary.from_toml(resources.files("rulekit").joinpath("data/error_lines.toml").read_text("utf-8"))


def reads_as_error(line: str, source: str = "applog") -> ErrorLine | None:
    """Whether `line` (from a `source` such as applog or syslog) reads as an error, by the
    packaged vocabulary: the cue and the component, or None."""
    return vocabulary().reads_as_error(line, source)


def component_of(line: str, source: str = "applog") -> Component:
    """The component an (error) line comes from, by the packaged vocabulary."""
    return vocabulary().component_of(line, source)
