"""What the acceleration structure knows about a rule corpus, as data for lint and
the language server (they render it as RK303..RK308 Diagnostics; this module never
builds a Diagnostic, prints or reads files).

- `analyze(patterns, sample)`: per pattern, the chosen key literal (or none),
  prefilterable or not and why (RK303), weak key with its sample line rate
  (RK304), the gate engine, and the confirmed match rate on the benign sample
  (RK305 when above `BROAD_RATE`).
- `sample_report(patterns, sample, extra_lines)`: confirmed hits per pattern on a
  benign sample (plus optional extra lines, e.g. the rules' own test lines),
  co-firing pairs with a witness line (RK306), subsumed pairs (RK307: every line
  one pattern matches is also matched by another), patterns never hit.
- `pattern_costs(patterns, sample)`: per-pattern seconds per MiB of running the
  rule alone on every sample line (RK308 above `COST_BUDGET`).

All exact: hits come from the Accelerator, whose results equal the naive loop's.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Sequence

from rulekit.extract.accel import Accelerator, PatternAnalysis, default_sample
from rulekit.extract.regex import compile_pattern
from rulekit.extract.scan import iter_lines

BROAD_RATE = 0.001  # confirmed matches on more than 0.1 % of benign lines
COST_BUDGET = 0.05  # seconds per MiB of log for one rule run alone (~20 MiB/s)


@dataclass(frozen=True)
class Overlap:
    a: int  # pattern indexes, a < b
    b: int
    lines: int  # lines both match
    witness: str  # the first such line


@dataclass(frozen=True)
class SampleReport:
    lines: int  # lines examined (sample + extra)
    sample_lines: int  # lines of the benign sample alone
    hits: list[int]  # per pattern: lines it matches (sample + extra)
    sample_hits: list[int]  # per pattern: lines of the benign sample it matches
    overlaps: list[Overlap]  # co-firing pairs, most frequent first
    subsumed: list[tuple[int, int]]  # (a, b): a has hits and every one is also b's
    never_hit: list[int]

    def sample_rate(self, i: int) -> float:
        return self.sample_hits[i] / self.sample_lines if self.sample_lines else 0.0

    def broad(self, threshold: float = BROAD_RATE) -> list[int]:
        return [i for i in range(len(self.hits)) if self.sample_rate(i) > threshold]


def _line_sets(acc: Accelerator, data: bytes) -> tuple[list[set[int]], dict[int, str], int]:
    per: list[set[int]] = [set() for _ in acc.patterns]
    text: dict[int, str] = {}
    for s, e, i, _gd in acc.scan(data):
        per[i].add(s)
        if s not in text:
            text[s] = data[s:e].rstrip(b"\r").decode("utf-8", "replace")
    nlines = sum(1 for _ in iter_lines(data))
    return per, text, nlines


def sample_report(patterns: Sequence[str], sample: bytes | None = None,
                  extra_lines: Sequence[str] = (), accelerator: Accelerator | None = None,
                  max_pairs: int = 200) -> SampleReport:
    """Confirmed hits, overlaps and subsumption on the benign sample (default: the
    packaged one) plus `extra_lines`."""
    if sample is None:
        sample = default_sample()
    if sample and not sample.endswith(b"\n"):
        sample += b"\n"
    acc = accelerator or Accelerator(patterns, sample=sample)
    extra = "".join(line.replace("\n", " ") + "\n" for line in extra_lines).encode("utf-8")
    per, text, nlines = _line_sets(acc, sample + extra)
    n_sample = sum(1 for _ in iter_lines(sample)) if sample else 0
    cut = len(sample)
    sample_hits = [sum(1 for s in lines if s < cut) for lines in per]

    by_line: dict[int, list[int]] = {}
    for i, lines in enumerate(per):
        for s in lines:
            by_line.setdefault(s, []).append(i)
    pair_count: dict[tuple[int, int], int] = {}
    pair_witness: dict[tuple[int, int], int] = {}
    for s in sorted(by_line):
        rules = sorted(by_line[s])
        for x in range(len(rules)):
            for y in range(x + 1, len(rules)):
                key = (rules[x], rules[y])
                pair_count[key] = pair_count.get(key, 0) + 1
                pair_witness.setdefault(key, s)
    overlaps = sorted((Overlap(a, b, c, text[pair_witness[(a, b)]]) for (a, b), c in pair_count.items()),
                      key=lambda o: (-o.lines, o.a, o.b))[:max_pairs]
    subsumed = [(a, b) for (a, b) in pair_count if per[a] <= per[b]] + \
               [(b, a) for (a, b) in pair_count if per[b] <= per[a]]
    never = [i for i, lines in enumerate(per) if not lines]
    return SampleReport(nlines, n_sample, [len(x) for x in per], sample_hits, overlaps, sorted(subsumed), never)


def analyze(patterns: Sequence[str], sample: bytes | None = None,
            accelerator: Accelerator | None = None) -> list[PatternAnalysis]:
    """The accelerator's per-pattern analysis with `broad_rate` filled from the sample."""
    if sample is None:
        sample = default_sample()
    acc = accelerator or Accelerator(patterns, sample=sample)
    rep = sample_report(patterns, sample, accelerator=acc)
    return [replace(a, broad_rate=rep.sample_rate(a.index)) for a in acc.analysis]


def pattern_costs(patterns: Sequence[str], sample: bytes | None = None, max_bytes: int = 128 << 10) -> list[float]:
    """Seconds per MiB of log for each pattern run alone on every line of (the first
    `max_bytes` of) the sample, as the naive loop would run it."""
    if sample is None:
        sample = default_sample()
    data = sample[:max_bytes]
    cut = data.rfind(b"\n")
    data = data[: cut + 1] if cut >= 0 else data
    lines = [data[s:e].decode("utf-8", "replace") for s, e in iter_lines(data)]
    mib = max(len(data), 1) / (1 << 20)
    out = []
    for p in patterns:
        search = compile_pattern(p).search
        t = time.perf_counter()
        for line in lines:
            search(line)
        out.append((time.perf_counter() - t) / mib)
    return out
