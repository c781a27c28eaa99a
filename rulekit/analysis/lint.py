"""`lint`: the corpus regex lint.  Rules that overlap or are overly broad make the
acceleration structure slow and attribution depend on rule order; each finding
comes with a witness.

* RK303 unfilterable-pattern: no required literal of >= 3 bytes (the prefilter
  cannot narrow the rule); RK304 weak-key: the rarest required literal is short or
  common on the benign sample.  Literals come from `rulekit.literals`, the same
  analysis the acceleration structure uses to choose its keys.
* RK305 broad-pattern: match rate on the benign sample above `broad_rate`, with the
  first benign line it matches (not for `data` extractors: recording versions and
  parameters from healthy logs is their job, and they never rank).
* RK308 slow-pattern: time per MB of the benign sample above the budget.
* RK306 overlapping-patterns / RK307 shadowed-pattern: for pairs of evidence
  extractors (not `data`) that can see the same lines (sources agree, not two entries of one catalog) and
  either share a required literal or co-fire on the sample, an exact search
  (`rulekit.analysis.overlap`) for a line both match with overlapping matches,
  and for containment; every witness is confirmed on RE2.  A pair the exact
  search cannot decide falls back to its sample witness (data `method`).
* RK205 unused symptoms (from the loader) and, when test results are given,
  RK402 / RK403 (rules with no test, rules no test fires).

Thresholds: `analysis/defaults.toml` [lint].  Suppress with `# rulekit: ignore[CODE]`.
Pure: returns Diagnostics; the only side effect is timing the patterns.
"""
from __future__ import annotations

import itertools
import time
from typing import Any, Iterable, Mapping, Sequence

from rulekit import literals as L
from rulekit.analysis import overlap as OV
from rulekit.analysis.coverage import run_coverage, static_coverage
from rulekit.analysis.settings import settings as default_settings
from rulekit.diagnostics import Diagnostic, Related, Span
from rulekit.loader import LoadResult, apply_suppressions
from rulekit.model import AccumulatorRule, ExtractorRule
from rulekit.regex import check_pattern, compile_pattern

Rule = ExtractorRule | AccumulatorRule


def _default_sample() -> bytes:
    from rulekit.accel import default_sample

    return default_sample()


def _where(r: Rule) -> Span:
    return getattr(r, "match_span", None) or r.span


def _unit(r: Rule) -> str:
    o = getattr(r, "origin", None) or ""
    return o.split("[", 1)[0] if o.startswith("catalog:") else r.name


def _compatible(a: Rule, b: Rule) -> bool:
    for x, y in ((a.sources, b.sources), (a.formats, b.formats)):
        if x and y and not set(x) & set(y):
            return False
    ua, ub = _unit(a), _unit(b)
    return not (ua.startswith("catalog:") and ua == ub)


def _evidence(r: Rule) -> bool:
    """Does the rule produce node evidence?  `data` extractors only record facts
    (versions, parameters): they are meant to match healthy logs and never rank."""
    return not (isinstance(r, ExtractorRule) and r.emit.type == "data")


def _symptom(r: Rule) -> str | None:
    if isinstance(r, ExtractorRule) and r.emit.symptom and "{" not in r.emit.symptom:
        return r.emit.symptom
    return None


def _lint_rules(load: LoadResult) -> list[Rule]:
    rules = load.engine.extractors + load.engine.accumulators if load.engine else [
        r for r in load.ruleset.rules if isinstance(r, (ExtractorRule, AccumulatorRule))]
    seen, out = set(), []
    for r in rules:
        if r.name in seen or check_pattern(r.match_re):
            continue
        seen.add(r.name)
        out.append(r)
    return out


# ---- literals ---------------------------------------------------------------------------------

def literal_checks(rules: Sequence[Rule], sample: bytes, cfg: Mapping[str, Any]) -> list[Diagnostic]:
    factors = [L.factors_of(r.match_re) for r in rules]
    choices = L.choose_keys(factors, sample)
    out = []
    for r, fs, ch in zip(rules, factors, choices):
        if fs is None:
            out.append(Diagnostic("RK303", f"`{r.name}`: no required literal can be extracted (Python's parser cannot "
                                  "read the pattern)", _where(r), data={"rule": r.name}))
            continue
        if ch.factor is None:
            out.append(Diagnostic("RK303", f"`{r.name}`: no literal of at least {L.MIN_KEY} bytes is required by every "
                                  "match, so the prefilter tries this rule on every candidate line", _where(r),
                                  data={"rule": r.name}))
            continue
        keys = sorted(k.decode("utf-8", "replace") for k in ch.factor)
        shortest = min(len(k) for k in ch.factor)
        if ch.rate > cfg["weak_key_rate"]:
            out.append(Diagnostic("RK304", f"`{r.name}`: its rarest required literal {' | '.join(map(repr, keys))} is on "
                                  f"{ch.rate:.2%} of benign sample lines (threshold {cfg['weak_key_rate']:.2%})",
                                  _where(r), data={"rule": r.name, "key": keys, "rate": ch.rate}))
        elif shortest < cfg["min_key_len"]:
            out.append(Diagnostic("RK304", f"`{r.name}`: its best required literal {' | '.join(map(repr, keys))} is only "
                                  f"{shortest} bytes long", _where(r), data={"rule": r.name, "key": keys}))
    return out


# ---- the sample: breadth and cost ---------------------------------------------------------------

def sample_lines(sample: bytes) -> list[str]:
    return [ln.rstrip("\r") for ln in sample.decode("utf-8", "replace").split("\n") if ln.strip()]


def sample_checks(rules: Sequence[Rule], lines: Sequence[str], size: int, cfg: Mapping[str, Any],
                  cost: bool = True) -> tuple[list[Diagnostic], dict[str, set[int]]]:
    """RK305 and RK308, and the sample lines each rule matches (for co-firing)."""
    out: list[Diagnostic] = []
    hits: dict[str, set[int]] = {}
    mb = max(size, 1) / (1 << 20)
    for r in rules:
        rx = compile_pattern(r.match_re)
        best = None
        for _ in range(max(1, int(cfg["cost_repeats"])) if cost else 1):
            t0 = time.perf_counter()
            matched = {i for i, ln in enumerate(lines) if rx.search(ln) is not None}
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        hits[r.name] = matched
        rate = len(matched) / len(lines) if lines else 0.0
        if lines and rate > cfg["broad_rate"] and _evidence(r):
            witness = lines[min(matched)]
            out.append(Diagnostic("RK305", f"`{r.name}` matches {len(matched)} of {len(lines)} benign sample lines "
                                  f"({rate:.2%}, threshold {cfg['broad_rate']:.2%}), e.g. {witness!r}", _where(r),
                                  data={"rule": r.name, "rate": rate, "witness": witness}))
        ms_per_mb = (best or 0.0) * 1000 / mb
        budget = cfg["cost_budget_ms_per_mb"]
        if cost and lines and budget > 0 and ms_per_mb > budget:
            out.append(Diagnostic("RK308", f"`{r.name}` costs {ms_per_mb:.1f} ms per MB of benign log "
                                  f"(budget {budget:g} ms/MB)", _where(r),
                                  data={"rule": r.name, "ms_per_mb": round(ms_per_mb, 2), "budget": budget}))
    return out, hits


# ---- overlap and shadowing ------------------------------------------------------------------------

def _keys(r: Rule) -> set[bytes]:
    fs = L.factors_of(r.match_re) or []
    return {k for f in fs for k in f}


def candidate_pairs(rules: Sequence[Rule], hits: Mapping[str, set[int]]) -> list[tuple[Rule, Rule, int | None]]:
    """Pairs worth the exact search: same lines possible, and a shared required literal
    (or no literal at all) or a benign line both match.  Third item: a co-firing line."""
    keys = {r.name: _keys(r) for r in rules}
    out = []
    for a, b in itertools.combinations([r for r in rules if _evidence(r)], 2):
        if not _compatible(a, b):
            continue
        common = hits.get(a.name, set()) & hits.get(b.name, set())
        ka, kb = keys[a.name], keys[b.name]
        shared = not ka or not kb or any(x in y or y in x for x in ka for y in kb)
        if common or shared:
            out.append((a, b, min(common) if common else None))
    return out


def _confirm(w: str, *rules: Rule) -> bool:
    return all(compile_pattern(r.match_re).search(w) is not None for r in rules)


def _rank(engine: Any, sym: str | None) -> int | None:
    if engine is None or sym is None or not engine.registry.is_known(sym):
        return None
    return engine.registry.rank(sym)


def _fix(w: str, winner: Rule) -> str:
    """An inline test for the winner on the witness line (TOML)."""
    import json

    sym = _symptom(winner)
    lines = ["[[extractor.test]]", f"line = {json.dumps(w, ensure_ascii=False)}"]
    if sym:
        lines.append(f"symptom = {json.dumps(sym)}")
    return "\n".join(lines)


def _fix_case(w: str, a: Rule, b: Rule, winner: Rule) -> str | None:
    """A job-level case (`*.test.toml`) on the witness line that pins the intended
    winner as the root cause: the quick fix the language server offers."""
    import json

    sym = _symptom(winner)
    if sym is None:
        return None
    common = [s for s in (a.sources or ()) if not b.sources or s in b.sources] or list(b.sources or ()) or ["applog"]
    return "\n".join([
        "[[case]]",
        f"name = {json.dumps(f'overlap of {a.name} and {b.name}: {winner.name} wins')}",
        'job = { id = "overlap", state = "FAILED", nodes = ["node-01"] }',
        "[[case.observation]]",
        f"source = {json.dumps(common[0])}",
        'node = "node-01"',
        f"lines = [{json.dumps(w, ensure_ascii=False)}]",
        "[case.expect]",
        f"root_cause = {json.dumps(sym)}",
    ])


def overlap_checks(rules: Sequence[Rule], hits: Mapping[str, set[int]], lines: Sequence[str], cfg: Mapping[str, Any],
                   engine: Any = None) -> list[Diagnostic]:
    out = []
    budget, rep = int(cfg["overlap_state_budget"]), int(cfg["max_repeat_expansion"])
    nfas: dict[str, OV.NFA | None] = {}

    def nfa(r: Rule) -> OV.NFA | None:
        if r.name not in nfas:
            try:
                nfas[r.name] = OV.compile_nfa(r.match_re, rep)
            except OV.Unsupported:
                nfas[r.name] = None
        return nfas[r.name]

    for a, b, cofire in candidate_pairs(rules, hits):
        na, nb = nfa(a), nfa(b)
        witness, method = None, None
        if na is not None and nb is not None:
            res = OV.overlap(na, nb, budget, rep, int(cfg["overlap_min_shared"]))
            if res.found and res.witness is not None and _confirm(res.witness, a, b):
                witness, method = res.witness, "exact" if res.exact else "approximate"
            elif res.found is False and res.exact:
                continue  # proven: no line where their matches overlap
        if witness is None and cofire is not None:
            witness, method = lines[cofire], "sample"
        if witness is None:
            continue
        # shadowing: is one contained in the other?
        shadow = None
        if na is not None and nb is not None:
            for big, small, nbig, nsmall in ((a, b, na, nb), (b, a, nb, na)):
                # cheap exact disproof first: a line `small` matches that `big` does not
                short = OV.shortest_line(nsmall, budget, rep)
                if short is not None and compile_pattern(big.match_re).search(short) is None:
                    continue
                if any(compile_pattern(big.match_re).search(lines[i]) is None for i in hits.get(small.name, ())):
                    continue
                c = OV.contains(nbig, nsmall, budget, rep)
                if c.found is True and c.exact:
                    shadow = (big, small)
                    break
        ra, rb = _rank(engine, _symptom(a)), _rank(engine, _symptom(b))
        if shadow:
            big, small = shadow
            rbig, rsmall = _rank(engine, _symptom(big)), _rank(engine, _symptom(small))
            if rbig is not None and rsmall is not None:
                if rbig > rsmall:
                    verdict = (f"`{big.name}` ({_symptom(big)}, rank {rbig}) wins on every such line, so `{small.name}` "
                               f"({_symptom(small)}, rank {rsmall}) can never decide the root cause on its own")
                elif rbig < rsmall:
                    verdict = (f"`{small.name}` ({_symptom(small)}, rank {rsmall}) outranks `{big.name}` "
                               f"({_symptom(big)}, rank {rbig}) on those lines, so it can still decide the root cause; "
                               f"`{big.name}` adds {_symptom(big)} evidence on every one of them")
                else:
                    verdict = f"both rank {rbig}: the earliest evidence decides, which makes attribution order-dependent"
            else:
                verdict = "their symptoms are set at run time (templates), so the winner depends on the line"
            out.append(Diagnostic(
                "RK307", f"every line `{small.name}` matches is also matched by `{big.name}` (e.g. {witness!r}); {verdict}",
                _where(small), related=(Related(_where(big), f"`{big.name}` is defined here"),),
                data={"rule": small.name, "other": big.name, "witness": witness, "method": method,
                      "fix": _fix(witness, win := (big if (rbig or 0) >= (rsmall or 0) else small)),
                      "fix_case": _fix_case(witness, small, big, win)}))
            continue
        later, first = (b, a)
        out.append(Diagnostic(
            "RK306", f"`{later.name}` and `{first.name}` both match {witness!r}"
            + (f" ({_symptom(first)} rank {ra} vs {_symptom(later)} rank {rb})" if ra is not None and rb is not None else "")
            + ("" if method == "exact" else f" [{method} witness]"),
            _where(later), related=(Related(_where(first), f"`{first.name}` is defined here"),),
            data={"rule": later.name, "other": first.name, "witness": witness, "method": method,
                  "fix": _fix(witness, win := (first if (ra or 0) >= (rb or 0) else later)),
                  "fix_case": _fix_case(witness, later, first, win)}))
    return out


# ---- the whole lint ---------------------------------------------------------------------------------

def lint_corpus(load: LoadResult, sample: bytes | None = None, config: Mapping[str, Any] | None = None,
                test_results: Iterable[Any] | None = None, cost: bool = True) -> list[Diagnostic]:
    """Every lint finding of a loaded corpus (see the module docstring).

    config: full settings (`analysis.settings.settings()`), default the defaults.
    test_results: results of running the corpus's tests; adds RK402 / RK403.
    cost: measure per-rule cost (RK308); off for reproducible output."""
    cfg = dict((config or default_settings())["lint"])
    cov_cfg = (config or default_settings())["coverage"]
    data = _default_sample() if sample is None else sample
    rules = _lint_rules(load)
    lines = sample_lines(data)
    diags: list[Diagnostic] = []
    diags += literal_checks(rules, data, cfg)
    found, hits = sample_checks(rules, lines, len(data), cfg, cost=cost)
    diags += found
    if cfg["overlap"]:
        diags += overlap_checks(rules, hits, lines, cfg, load.engine)
    diags += [d for d in load.diagnostics if d.code == "RK205"]
    if test_results is not None and cfg["coverage"] and load.engine is not None:
        cov = static_coverage(load.engine, cov_cfg) + run_coverage(load.engine, test_results, cov_cfg)
        diags += [d for d in cov if d.code in ("RK402", "RK403")]
    return sorted(apply_suppressions(diags, load.texts), key=Diagnostic.sort_key)
