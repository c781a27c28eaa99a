"""`lint`: the corpus regex lint.  Rules that overlap or are overly broad make the
acceleration structure slow and attribution depend on rule order; each finding
comes with a witness.  The data comes from the acceleration structure itself
(`rulekit.extract.accel.Accelerator` built over the corpus's patterns and the benign
sample, and `rulekit.extract.accel_report.pattern_costs`), so lint says what the
structure actually does.

* RK303 unfilterable-pattern: the accelerator chose no key literal (none of >= 3
  bytes is required, or the pattern cannot be read or gated) and says why.
* RK304 weak-key: the chosen (rarest) key is on more than `weak_key_rate` of benign
  sample lines, or shorter than `min_key_len` bytes.
* RK305 broad-pattern: match rate on the benign sample above `broad_rate`, with the
  first benign line it matches (not for `data` extractors: recording versions and
  parameters from healthy logs is their job, and they never rank).
* RK308 slow-pattern: time per MB running the rule alone on the sample, above the budget.
* RK306 overlapping-patterns: two evidence extractors (not `data`, not a fallback: a
  fallback reads what no other rule reads, by design every line; the engine drops it
  where another rule reads the line) that can see the same lines (sources agree, not
  two entries of one catalog) and
  - both fire on a real line: a benign sample line or one of the corpus's own test
    lines (inline test lines and job-test observations); that line is the witness;
  - or, for pairs that share a required literal (or where one has none), the exact
    search of `rulekit.analysis.overlap` constructs a line where their matches share
    at least `overlap_min_shared` characters (confirmed on RE2).  Pairs that share
    no literal and never co-fire are not searched unless `overlap_all_pairs` is set
    (every compatible pair; minutes on a large corpus: for a nightly job).
* RK307 shadowed-pattern: of an overlapping pair, one's lines are all the other's
  (exact containment by `overlap.contains`, after cheap exact disproofs), with who
  wins by rank and whether the loser can ever decide the root cause.
* RK205 unused symptoms (from the loader) and, when test results are given,
  RK402 / RK403 (rules with no test, rules no test fires).

Every overlap carries quick fixes in `data`: `fix` (an inline test of the winner on
the witness) and `fix_case` (a `*.test.toml` case pinning the winner as the root
cause).  Thresholds: `analysis/defaults.toml` [lint].  Suppress with
`# rulekit: ignore[CODE]`.  Pure: returns Diagnostics; the only side effect is
timing the patterns (RK308; `cost=False` skips it).
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Mapping, Sequence

from rulekit.rules.records import dataclass
from rulekit.extract import literals as L
from rulekit.analysis import overlap as OV
from rulekit.analysis.coverage import run_coverage, static_coverage
from rulekit.analysis.settings import settings as default_settings
from rulekit.diagnostics import Diagnostic, Related, Span
from rulekit.rules.loader import LoadResult, apply_suppressions
from rulekit.rules.model import AccumulatorRule, ExtractorRule
from rulekit.extract.regex import check_pattern, compile_pattern

Rule = ExtractorRule | AccumulatorRule


def _default_sample() -> bytes:
    from rulekit.extract.accel import default_sample

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


# ---- the acceleration structure's view: literals, sample hits, cost ------------------------------

@dataclass
class SampleScan:
    """Which lines of the benign sample (and of the corpus's own test lines) each rule
    matches, from the acceleration structure's exact scan."""

    hits: dict[str, set[int]]  # rule -> line start offsets
    text: dict[int, str]  # line start -> the line
    cut: int  # offsets below this are benign sample lines, the rest are test lines
    sample_lines: int


def literal_checks(rules: Sequence[Rule], acc: Any, cfg: Mapping[str, Any]) -> list[Diagnostic]:
    """RK303 / RK304 from the accelerator's per-pattern analysis (`Accelerator.analysis`):
    the key literal it chose (rarest in the sample), prefilterable or not and why."""
    out = []
    for r, a in zip(rules, acc.analysis):
        if a.key is None or (not a.prefilterable and not a.weak_key and a.reason):
            why = a.reason or f"no literal of at least {L.MIN_KEY} bytes is required by every match"
            out.append(Diagnostic("RK303", f"`{r.name}`: the prefilter cannot narrow it ({why}), so it is tried on "
                                  "every line that passes the gate", _where(r), data={"rule": r.name, "reason": why}))
            continue
        keys = sorted(k.decode("utf-8", "replace") for k in a.key)
        shortest = min(len(k) for k in a.key)
        if a.key_sample_rate > cfg["weak_key_rate"]:
            out.append(Diagnostic("RK304", f"`{r.name}`: its rarest required literal {' | '.join(map(repr, keys))} is on "
                                  f"{a.key_sample_rate:.2%} of benign sample lines (threshold {cfg['weak_key_rate']:.2%})",
                                  _where(r), data={"rule": r.name, "key": keys, "rate": a.key_sample_rate}))
        elif shortest < cfg["min_key_len"]:
            out.append(Diagnostic("RK304", f"`{r.name}`: its best required literal {' | '.join(map(repr, keys))} is only "
                                  f"{shortest} bytes long", _where(r), data={"rule": r.name, "key": keys}))
    return out


def sample_lines(sample: bytes) -> list[str]:
    return [ln.rstrip("\r") for ln in sample.decode("utf-8", "replace").split("\n") if ln.strip()]


def scan_sample(rules: Sequence[Rule], acc: Any, sample: bytes, extra_lines: Sequence[str] = ()) -> SampleScan:
    from rulekit.extract.scan import iter_lines

    if sample and not sample.endswith(b"\n"):
        sample += b"\n"
    extra = "".join(ln.replace("\n", " ") + "\n" for ln in extra_lines).encode("utf-8")
    data = sample + extra
    hits: dict[str, set[int]] = {r.name: set() for r in rules}
    text: dict[int, str] = {}
    # each pattern's matches on these bytes are memoized: after an edit only the changed
    # patterns are scanned (by an accelerator over just them, as exact as the full one)
    import hashlib

    digest = hashlib.sha1(data).digest()
    memo = _MEMO.table("scan")
    missing = [i for i, r in enumerate(rules) if (r.match_re, digest) not in memo]
    if missing:
        if len(missing) == len(rules):
            sub, idx = acc, list(range(len(rules)))
        else:
            from rulekit.extract.accel import Accelerator

            sub, idx = Accelerator([rules[i].match_re for i in missing], sample=sample), missing
        found: dict[int, list[tuple[int, int]]] = {i: [] for i in idx}
        for start, end, k, _caps in sub.scan(data):
            found[idx[k]].append((start, end))
        for i in idx:
            memo[(rules[i].match_re, digest)] = tuple(found[i])
    for r in rules:
        for start, end in memo[(r.match_re, digest)]:
            hits[r.name].add(start)
            if start not in text:
                text[start] = data[start:end].rstrip(b"\r").decode("utf-8", "replace")
    n = sum(1 for s, e in iter_lines(sample) if sample[s:e].strip()) if sample else 0
    return SampleScan(hits, text, len(sample), n)


def broad_checks(rules: Sequence[Rule], scan: SampleScan, cfg: Mapping[str, Any]) -> list[Diagnostic]:
    """RK305: match rate on the benign sample (its lines only, not the test lines)."""
    out = []
    for r in rules:
        benign = sorted(x for x in scan.hits[r.name] if x < scan.cut)
        rate = len(benign) / scan.sample_lines if scan.sample_lines else 0.0
        if benign and rate > cfg["broad_rate"] and _evidence(r):
            witness = scan.text[benign[0]]
            out.append(Diagnostic("RK305", f"`{r.name}` matches {len(benign)} of {scan.sample_lines} benign sample lines "
                                  f"({rate:.2%}, threshold {cfg['broad_rate']:.2%}), e.g. {witness!r}", _where(r),
                                  data={"rule": r.name, "rate": rate, "witness": witness}))
    return out


def cost_checks(rules: Sequence[Rule], sample: bytes, cfg: Mapping[str, Any]) -> list[Diagnostic]:
    """RK308: each rule run alone on every sample line (`accel_report.pattern_costs`),
    the fastest of `cost_repeats` runs, against the budget."""
    from rulekit.extract.accel_report import pattern_costs

    budget = cfg["cost_budget_ms_per_mb"]
    if budget <= 0 or not sample:
        return []
    pats = [r.match_re for r in rules]
    runs = [pattern_costs(pats, sample) for _ in range(max(1, int(cfg["cost_repeats"])))]
    out = []
    for i, r in enumerate(rules):
        ms_per_mb = min(run[i] for run in runs) * 1000 / 1.048576  # s/MiB -> ms/MB
        if ms_per_mb > budget:
            out.append(Diagnostic("RK308", f"`{r.name}` costs {ms_per_mb:.1f} ms per MB of benign log "
                                  f"(budget {budget:g} ms/MB)", _where(r),
                                  data={"rule": r.name, "ms_per_mb": round(ms_per_mb, 2), "budget": budget}))
    return out


# ---- overlap and shadowing ------------------------------------------------------------------------

def _keys(r: Rule) -> set[bytes]:
    fs = L.factors_of(r.match_re) or []
    return {k for f in fs for k in f}


def candidate_pairs(rules: Sequence[Rule], hits: Mapping[str, set[int]],
                    all_pairs: bool = False,
                    checkpoint: Callable[[], None] | None = None) -> list[tuple[Rule, Rule, int | None]]:
    """Pairs worth the exact search: same lines possible, and a shared required literal
    (or no literal at all) or a real line (benign sample or test line) both match.
    Third item: the first such line (its offset).  What depends only on two rules'
    patterns and sources is memoized (`_MEMO`), so a re-lint after an edit does the
    work only for pairs that involve a changed rule."""
    ev = [r for r in rules if _evidence(r) and not getattr(r, "fallback", False)]
    if all_pairs:
        sigs = [_sig(r) for r in ev]
        return [(a, b, min(c) if (c := hits.get(a.name, set()) & hits.get(b.name, set())) else None)
                for (i, a), (j, b) in itertools.combinations(enumerate(ev), 2)
                if _pair_static(sigs[i], sigs[j]) is not None]
    sigs = [_sig(r) for r in ev]
    by_sig: dict[tuple, list[int]] = {}
    for i, sg in enumerate(sigs):
        by_sig.setdefault(sg, []).append(i)
    pairs: set[tuple[int, int]] = set()
    for sa, sb in _PAIRS.true_pairs(by_sig, checkpoint):  # share a literal: the exact search decides
        for i in by_sig[sa]:
            for j in by_sig[sb]:
                if i != j:
                    pairs.add((min(i, j), max(i, j)))
    by_line: dict[int, list[int]] = {}  # co-firing on a real line: that line is the witness
    for i, r in enumerate(ev):
        for off in hits.get(r.name, ()):
            by_line.setdefault(off, []).append(i)
    first: dict[tuple[int, int], int] = {}  # pair -> the first line both match
    for off in sorted(by_line):
        idx = by_line[off]
        if len(idx) > 1:
            for i, j in itertools.combinations(idx, 2):
                if (i, j) not in first:
                    first[(i, j)] = off
    for (i, j) in first:
        if (i, j) not in pairs and _pair_static(sigs[i], sigs[j]) is not None:
            pairs.add((i, j))
    return [(ev[i], ev[j], first.get((i, j))) for i, j in sorted(pairs)]


class _PairIndex:
    """Which rule signatures share a required literal (and can see the same lines),
    maintained incrementally: a signature not seen before is checked against the
    others once; everything else is reused."""

    def __init__(self) -> None:
        self.known: list[tuple] = []
        self.known_set: set[tuple] = set()
        self.partners: dict[tuple, set[tuple]] = {}

    def true_pairs(self, current: Mapping[tuple, Any],
                   checkpoint: Callable[[], None] | None = None) -> list[tuple[tuple, tuple]]:
        new = [sg for sg in current if sg not in self.known_set]
        if len(self.known) + len(new) > 4 * max(len(current), 1000):  # mostly stale signatures: start over
            self.__init__()  # type: ignore[misc]
            new = list(current)
        for x in new:
            if checkpoint is not None:
                checkpoint()  # a first (full) pass is long: let an edit in between signatures
            mine = self.partners.setdefault(x, set())
            if _pair_static(x, x):
                mine.add(x)
            for y in self.known:
                if _pair_static(x, y):
                    mine.add(y)
                    self.partners.setdefault(y, set()).add(x)
            self.known.append(x)
            self.known_set.add(x)
        out = []
        for x in current:
            for y in self.partners.get(x, ()):
                if y in current and (x <= y):
                    out.append((x, y))
        return out


_PAIRS = _PairIndex()


class _Memo:
    """Bounded memo tables for the pure, per-pattern parts of the lint (process-wide:
    the language server re-lints after every edit)."""

    LIMIT = 400_000

    def __init__(self) -> None:
        self.tables: dict[str, dict] = {}

    def table(self, name: str) -> dict:
        t = self.tables.setdefault(name, {})
        if len(t) > self.LIMIT:
            t.clear()
        return t


_MEMO = _Memo()

# the memo tables worth keeping across processes: pure functions of patterns (and the
# sample's digest), the exact searches above all (most of a first lint's time)
PERSISTED = ("overlap", "contains", "shortest", "scan", "keys", "pairs", "nfa-ok")
_saved_sizes: dict[str, int] = {}


def _memo_key() -> str:
    from rulekit.extract import diskcache

    return diskcache.make_key("lint-memo", diskcache.code_fingerprint())


def load_memo() -> int:
    """Merge the on-disk lint memo (rulekit.extract.diskcache, keyed by the code that
    computed it) into this process's; the number of entries read (0: none, disabled
    or unreadable, never an error)."""
    from rulekit.extract import diskcache

    got = diskcache.load("lint-memo", _memo_key())
    if not isinstance(got, dict):
        return 0
    n = 0
    for name in PERSISTED:
        table = got.get(name)
        if isinstance(table, dict):
            mine = _MEMO.table(name)
            for k, v in table.items():
                mine.setdefault(k, v)
            n += len(table)
            _saved_sizes[name] = len(mine)
    return n


def save_memo() -> bool:
    """Write this process's lint memo to disk when it grew since the last save or load
    (so the next language server or `rulekit lint` starts warm); False when nothing
    was new or the cache is disabled."""
    from rulekit.extract import diskcache

    sizes = {name: len(_MEMO.tables.get(name, {})) for name in PERSISTED}
    if all(sizes[n] <= _saved_sizes.get(n, 0) for n in PERSISTED):
        return False
    body = {name: dict(_MEMO.tables.get(name, {})) for name in PERSISTED}
    ok = diskcache.store("lint-memo", _memo_key(), body)
    if ok:
        _saved_sizes.update(sizes)
    return ok


def _sig(r: Rule) -> tuple:
    unit = _unit(r)
    return (r.match_re, tuple(r.sources or ()), tuple(r.formats or ()), unit if unit.startswith("catalog:") else None)


def _keys_of(pattern: str) -> frozenset[bytes]:
    t = _MEMO.table("keys")
    got = t.get(pattern)
    if got is None:
        fs = L.factors_of(pattern) or []
        got = t[pattern] = frozenset(k for f in fs for k in f)
    return got


def _pair_static(sa: tuple, sb: tuple) -> bool | None:
    """None: the two can never see the same line (sources/formats disagree, or two entries
    of one catalog); else whether they share a required literal (or one has none)."""
    t = _MEMO.table("pairs")
    key = (sa, sb)
    if key in t:
        return t[key]
    for x, y in ((sa[1], sb[1]), (sa[2], sb[2])):
        if x and y and not set(x) & set(y):
            t[key] = None
            return None
    if sa[3] is not None and sa[3] == sb[3]:
        t[key] = None
        return None
    ka, kb = _keys_of(sa[0]), _keys_of(sb[0])
    t[key] = res = not ka or not kb or any(x in y or y in x for x in ka for y in kb)
    return res


def _memo_search(kind: str, fn, *args):
    """OV.overlap / contains / shortest_line on patterns, memoized by their arguments."""
    t = _MEMO.table(kind)
    if args in t:
        return t[args]
    t[args] = res = fn(*args)
    return res


def _confirm(w: str, *rules: Rule) -> bool:
    return all(compile_pattern(r.match_re).search(w) is not None for r in rules)


def _rank(engine: Any, sym: str | None) -> int | None:
    if engine is None or sym is None or not engine.registry.is_known(sym):
        return None
    return engine.registry.rank(sym)


_WITNESS_NOTE = {"sample": " [a benign sample line]", "test line": " [a test line of the corpus]",
                 "approximate": " [witness from an over-approximation, confirmed on RE2]"}


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


def overlap_checks(rules: Sequence[Rule], scan: SampleScan, cfg: Mapping[str, Any],
                   engine: Any = None, checkpoint: Callable[[], None] | None = None) -> list[Diagnostic]:
    """RK306 / RK307.  A pair is reported when both rules fire on a real line (the
    benign sample or the corpus's own test lines: the witness is that line), or
    when the exact search constructs a line where their matches overlap."""
    hits = scan.hits
    out = []
    budget, rep = int(cfg["overlap_state_budget"]), int(cfg["max_repeat_expansion"])
    nfas: dict[str, OV.NFA | None] = {}

    def nfa(r: Rule) -> OV.NFA | None:
        if r.name not in nfas:
            t = _MEMO.table("nfa")
            key = (r.match_re, rep)
            if key not in t:
                try:
                    t[key] = OV.compile_nfa(r.match_re, rep)
                except OV.Unsupported:
                    t[key] = None
            nfas[r.name] = t[key]
        return nfas[r.name]

    def supported(r: Rule) -> bool:
        """Does the exact search handle this pattern?  Memoized apart from the NFA itself
        (and kept on disk): with the searches memoized, no NFA needs building at all."""
        t = _MEMO.table("nfa-ok")
        key = (r.match_re, rep)
        if key not in t:
            t[key] = nfa(r) is not None
        return t[key]

    def search(kind: str, fn, x: Rule, y: Rule, *more):
        return _memo_search(kind, lambda *_: fn(nfa(x), nfa(y), *more), x.match_re, y.match_re, *more)

    for a, b, cofire in candidate_pairs(rules, hits, bool(cfg["overlap_all_pairs"]), checkpoint):
        if checkpoint is not None:
            checkpoint()  # the caller may pause us here (the language server, while an edit is analysed)
        both = supported(a) and supported(b)
        witness, method = None, None
        if cofire is not None:
            witness, method = scan.text[cofire], ("sample" if cofire < scan.cut else "test line")
        elif both:
            res = search("overlap", OV.overlap, a, b, budget, rep, int(cfg["overlap_min_shared"]))
            if res.found and res.witness is not None and _confirm(res.witness, a, b):
                witness, method = res.witness, "exact" if res.exact else "approximate"
        if witness is None:
            continue
        # shadowing: is one contained in the other?
        shadow = None
        if both:
            for big, small in ((a, b), (b, a)):
                # cheap exact disproof first: a line `small` matches that `big` does not
                short = _memo_search("shortest", lambda *_, s=small: OV.shortest_line(nfa(s), budget, rep),
                                     small.match_re, budget, rep)
                if short is not None and compile_pattern(big.match_re).search(short) is None:
                    continue
                if hits.get(small.name, set()) - hits.get(big.name, set()):
                    continue  # a real line `small` matches and `big` does not
                c = search("contains", OV.contains, big, small, budget, rep)
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
            + _WITNESS_NOTE.get(method or "", ""),
            _where(later), related=(Related(_where(first), f"`{first.name}` is defined here"),),
            data={"rule": later.name, "other": first.name, "witness": witness, "method": method,
                  "fix": _fix(witness, win := (first if (ra or 0) >= (rb or 0) else later)),
                  "fix_case": _fix_case(witness, later, first, win)}))
    return out


# ---- the whole lint ---------------------------------------------------------------------------------

def lint_corpus(load: LoadResult, sample: bytes | None = None, config: Mapping[str, Any] | None = None,
                test_results: Iterable[Any] | None = None, cost: bool = True,
                checkpoint: Callable[[], None] | None = None) -> list[Diagnostic]:
    """Every lint finding of a loaded corpus (see the module docstring).

    config: full settings (`analysis.settings.settings()`), default the defaults.
    test_results: results of running the corpus's tests; adds RK402 / RK403.
    cost: measure per-rule cost (RK308); off for reproducible output."""
    cfg = dict((config or default_settings())["lint"])
    cov_cfg = (config or default_settings())["coverage"]
    data = _default_sample() if sample is None else sample
    rules = _lint_rules(load)
    diags: list[Diagnostic] = []
    if rules:
        from rulekit.extract.accel import Accelerator

        acc = Accelerator([r.match_re for r in rules], sample=data)
        extra = [t.line for r in rules for t in r.tests]
        extra += [ln for c in load.ruleset.job_tests for o in c.observations for ln in o.lines]
        scan = scan_sample(rules, acc, data, extra)
        diags += literal_checks(rules, acc, cfg)
        diags += broad_checks(rules, scan, cfg)
        if cost:
            diags += cost_checks(rules, data, cfg)
        if cfg["overlap"]:
            diags += overlap_checks(rules, scan, cfg, load.engine, checkpoint)
    diags += [d for d in load.diagnostics if d.code == "RK205"]
    if test_results is not None and cfg["coverage"] and load.engine is not None:
        cov = static_coverage(load.engine, cov_cfg) + run_coverage(load.engine, test_results, cov_cfg)
        diags += [d for d in cov if d.code in ("RK402", "RK403")]
    return sorted(apply_suppressions(diags, load.texts), key=Diagnostic.sort_key)
