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

Cost: the pairs come from an index of the patterns' literals (`pairindex`), not from
trying every pair, and pass cheap sound screens (`overlap_screen`) before the exact
search; every expensive part is memoized by content (patterns, lines, the sample) in a
bounded memo that survives edits and is kept on disk (`load_memo` / `save_memo`), and
the test lines are scanned incrementally (`lintscan.LineHits`), so a re-lint after an
edit redoes only what involves the edited rules.  `lint_corpus(..., index=False)` is
the definition the index is tested against: every pair through `pairindex.static_pair`,
one scan of everything.

Every overlap carries quick fixes in `data`: `fix` (an inline test of the winner on
the witness) and `fix_case` (a `*.test.toml` case pinning the winner as the root
cause).  Thresholds: `analysis/defaults.toml` [lint].  Suppress with
`# rulekit: ignore[CODE]`.  Pure: returns Diagnostics; the only side effect is
timing the patterns (RK308; `cost=False` skips it).
"""
from __future__ import annotations

import itertools
import threading
from typing import Any, Callable, Iterable, Mapping, Sequence

from rulekit.rules.records import dataclass
from rulekit.extract import literals as L
from rulekit.analysis import lintscan
from rulekit.analysis import overlap as OV
from rulekit.analysis import overlap_screen as SC
from rulekit.analysis.pairindex import PairIndex, compatible, static_pair, survivors_all_pairs
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


def literal_checks(rules: Sequence[Rule], analysis: Sequence[Any], cfg: Mapping[str, Any]) -> list[Diagnostic]:
    """RK303 / RK304 from the accelerator's per-pattern analysis (`Accelerator.analysis`,
    `lintscan.analyses`): the key literal it chose (rarest in the sample), prefilterable
    or not and why."""
    out = []
    for r, a in zip(rules, analysis):
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


def scan_incremental(rules: Sequence[Rule], sample: bytes, extra_lines: Sequence[str] = (),
                     accelerator: Callable[[], Any] | None = None) -> SampleScan:
    """`scan_sample`'s result, from memoized per-pattern sample hits and the test lines'
    hits kept across lints (`lintscan`): only new patterns and new lines are scanned.
    `accelerator()`: one over these rules' patterns, built only when everything is new."""
    from rulekit.extract.scan import iter_lines

    if sample and not sample.endswith(b"\n"):
        sample += b"\n"
    pats = [r.match_re for r in rules]
    memo = _MEMO.table("scan")
    built: list[Any] = []

    def big() -> Any:
        if not built:
            built.append(accelerator() if accelerator is not None else None)
        return built[0]

    per_pattern = lintscan.sample_hits(pats, sample, memo, accelerator=big() if _all_missing(pats, sample, memo) else None)
    hits: dict[str, set[int]] = {r.name: set() for r in rules}
    text: dict[int, str] = {}
    for r, found in zip(rules, per_pattern):
        mine = hits[r.name]
        for start, end in found:
            mine.add(start)
            if start not in text:
                text[start] = sample[start:end].rstrip(b"\r").decode("utf-8", "replace")
    cut = len(sample)
    lines = [ln.replace("\n", " ") for ln in extra_lines]
    first: dict[str, int] = {}
    for i, ln in enumerate(lines):
        first.setdefault(ln, cut + i)
    seen = _LINES.get(len(pats))
    seen.update(pats, list(first), sample, big)
    for r in rules:
        got = seen.hits.get(r.match_re)
        if got:
            mine = hits[r.name]
            for ln in got:
                at = first.get(ln)
                if at is not None:
                    mine.add(at)
                    text.setdefault(at, seen.lines[ln])
    n = sum(1 for s, e in iter_lines(sample) if sample[s:e].strip()) if sample else 0
    return SampleScan(hits, text, cut, n)


def _all_missing(pats: Sequence[str], sample: bytes, memo: Mapping) -> bool:
    import hashlib

    digest = hashlib.sha1(sample).digest()
    return all((p, digest) not in memo for p in pats)


class _LineState:
    """The process's `lintscan.LineHits` (dropped when mostly stale)."""

    def __init__(self) -> None:
        self.hits = lintscan.LineHits()

    def get(self, current: int) -> lintscan.LineHits:
        if len(self.hits.patterns) > 4 * max(current, 1000):  # mostly patterns of old texts: start over
            self.hits = lintscan.LineHits()
        return self.hits


_LINES = _LineState()


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
                    checkpoint: Callable[[], None] | None = None,
                    cfg: Mapping[str, Any] | None = None,
                    index: bool = True) -> list[tuple[Rule, Rule, int | None]]:
    """Pairs worth the exact search: same lines possible, and a shared required literal
    (or no literal at all) or a real line (benign sample or test line) both match.
    Third item: the first such line (its offset).  With `index`, the literal pairs come
    from `pairindex.PairIndex` (only those the overlap screens cannot rule out: the
    others would be searched for nothing), kept in the memo across lints; without,
    every pair of signatures goes through `pairindex.static_pair` (the definition)."""
    ev = [r for r in rules if _evidence(r) and not getattr(r, "fallback", False)]
    sigs = [_sig(r) for r in ev]
    by_sig: dict[tuple, list[int]] = {}
    for i, sg in enumerate(sigs):
        by_sig.setdefault(sg, []).append(i)
    rep = int((cfg or {}).get("max_repeat_expansion", 40))
    shared = int((cfg or {}).get("overlap_min_shared", 3))
    pairs: set[tuple[int, int]] = set()
    if all_pairs:
        sig_pairs = survivors_all_pairs(list(by_sig), _keeper(rep, shared))
    elif index:
        idx = _PAIRS.get(rep, shared)
        idx.update(by_sig, checkpoint)
        sig_pairs = idx.pairs(by_sig)
    else:
        uniq = list(by_sig)
        sig_pairs = [(sa, sb) for k, sa in enumerate(uniq) for sb in uniq[k:] if static_pair(sa, sb, _keys_of)]
    for sa, sb in sig_pairs:  # share a literal: the exact search decides
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
        idx_ = by_line[off]
        if len(idx_) > 1:
            for i, j in itertools.combinations(idx_, 2):
                if (i, j) not in first:
                    first[(i, j)] = off
    for (i, j) in first:
        if (i, j) not in pairs and compatible(sigs[i], sigs[j]):
            pairs.add((i, j))
    return [(ev[i], ev[j], first.get((i, j))) for i, j in sorted(pairs)]


def _keeper(rep: int, shared: int) -> Callable[[tuple, tuple], bool]:
    """Does a statically paired couple of signatures need the exact search?  Both
    patterns must compile to its NFAs and the screens must not rule the overlap out."""

    def keep(sa: tuple, sb: tuple) -> bool:
        a, b = _shape(sa[0], rep), _shape(sb[0], rep)
        if a is None or b is None:
            return False
        if sa[0] == sb[0]:
            return True
        return not SC.quick_disjoint(a, b) and SC.may_overlap(a, b, shared)

    return keep


def _nfa(pattern: str, rep: int) -> "OV.NFA | None":
    t = _MEMO.table("nfa")
    key = (pattern, rep)
    got = t.get(key, _NONE)
    if got is _NONE:
        try:
            got = OV.compile_nfa(pattern, rep)
        except OV.Unsupported:
            got = None
        t[key] = got
        _MEMO.table("nfa-ok")[key] = got is not None
    return got


def _shape(pattern: str, rep: int) -> "SC.Shape | None":
    t = _MEMO.table("shape")
    key = (pattern, rep)
    got = t.get(key, _NONE)
    if got is _NONE:
        ok = _MEMO.table("nfa-ok").get(key)
        nfa = None if ok is False else _nfa(pattern, rep)
        got = t[key] = SC.Shape(nfa) if nfa is not None else None
    return got


_NONE = object()


class _PairIndexes:
    """The process's `PairIndex` per search setting (their survivor tables live in the memo)."""

    def __init__(self) -> None:
        self.indexes: dict[tuple[int, int], tuple[dict, PairIndex]] = {}

    def get(self, rep: int, shared: int) -> PairIndex:
        table = _MEMO.table(f"pairs:{rep}:{shared}")
        got = self.indexes.get((rep, shared))
        if got is None or got[0] is not table:  # a new memo (tests, or loaded): a new index over it
            got = self.indexes[(rep, shared)] = (table, PairIndex(_keys_of, _keeper(rep, shared), table))
        return got[1]


_PAIRS = _PairIndexes()


class _Memo:
    """Bounded memo tables for the pure parts of the lint, keyed by content (patterns,
    lines, the sample's digest), so they survive edits; process-wide (the language
    server re-lints after every edit).  A table past `LIMIT` entries drops its oldest
    quarter (what a lookup found is moved to the end once the table is half full)."""

    LIMIT = 1_000_000
    # tables of larger entries (a finished finding holds its witness and quick fixes,
    # ~1 KB): a few times the findings of a corpus of thousands of rules
    LIMITS = {"findings": 200_000, "rendered": 100_000}

    def __init__(self) -> None:
        self.tables: dict[str, dict] = {}

    def table(self, name: str) -> dict:
        t = self.tables.get(name)
        limit = min(self.LIMIT, self.LIMITS.get(name, self.LIMIT))
        if t is None:
            t = self.tables[name] = {}
        elif len(t) > limit:
            for k in list(itertools.islice(t, len(t) - limit * 3 // 4)):
                del t[k]
        return t


_MEMO = _Memo()
_LOCK = threading.RLock()  # one lint at a time per process: the memo, the index and the line hits are shared

# the memo tables worth keeping across processes: pure functions of patterns (and the
# sample's digest), the exact searches and the pair index above all (most of a first lint's time)
PERSISTED = ("overlap", "contains", "shortest", "scan", "keys", "nfa-ok", "factors", "superset", "keycount")
_saved_sizes: dict[str, int] = {}


def _persisted() -> list[str]:
    return [*PERSISTED, *sorted(n for n in _MEMO.tables if n.startswith("pairs:"))]


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
    for name in [*PERSISTED, *(k for k in got if isinstance(k, str) and k.startswith("pairs:"))]:
        table = got.get(name)
        if isinstance(table, dict):
            mine = _MEMO.table(name)
            for k, v in table.items():
                mine.setdefault(k, v)
            n += len(table)
            _saved_sizes[name] = len(mine)
    return n


def save_memo(at_most_every: float = 0.0) -> bool:
    """Write this process's lint memo to disk when it grew since the last save or load
    (so the next language server or `rulekit lint` starts warm); False when nothing
    was new or the cache is disabled.  at_most_every: seconds; a save sooner than that
    after the last one is put off (the language server re-lints after every edit, and
    writing the whole memo costs more than the re-lint itself at thousands of rules)."""
    import time

    from rulekit.extract import diskcache

    names = _persisted()
    sizes = {name: len(_MEMO.tables.get(name, {})) for name in names}
    if all(sizes[n] <= _saved_sizes.get(n, 0) for n in names):
        return False
    if at_most_every and _last_save and _last_save[0] is _MEMO and time.monotonic() - _last_save[1] < at_most_every:
        return False
    with _LOCK:
        body = {name: dict(_MEMO.tables.get(name, {})) for name in names}
    ok = diskcache.store("lint-memo", _memo_key(), body)
    if ok:
        _saved_sizes.update(sizes)
        _last_save[:] = [_MEMO, time.monotonic()]
    return ok


_last_save: list = []  # [the memo, when (monotonic seconds)] this process last wrote it


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


def _memo_search(kind: str, fn, *args):
    """OV.overlap / contains / shortest_line on patterns, memoized by their arguments."""
    t = _MEMO.table(kind)
    got = t.get(args, _NONE)
    if got is not _NONE:
        if len(t) > _Memo.LIMIT // 2:  # keep what is used when the table must shed entries
            del t[args]
            t[args] = got
        return got
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
                   engine: Any = None, checkpoint: Callable[[], None] | None = None,
                   focus: set[str] | None = None, index: bool = True) -> list[Diagnostic]:
    """RK306 / RK307.  A pair is reported when both rules fire on a real line (the
    benign sample or the corpus's own test lines: the witness is that line), or
    when the exact search constructs a line where their matches overlap.  focus: rule
    names; only pairs with at least one of them are searched (default: every pair).

    With `index`, each pair's finished finding (or its absence) is kept in the memo
    table "findings", keyed by what decides it: the two rules' content (name, pattern,
    symptom and its rank, sources), the co-firing witness, whether each has a real
    line the other lacks, and the search settings; never by position, so it survives
    edits, and a re-lint after an edit searches only the pairs whose content changed
    (the edited rule's).  The places come from the current rules."""
    hits = scan.hits
    out = []
    budget, rep = int(cfg["overlap_state_budget"]), int(cfg["max_repeat_expansion"])
    shared = int(cfg["overlap_min_shared"])
    settings_key = (budget, rep, shared)
    memo = _MEMO.table("findings") if index else None
    rendered = _MEMO.table("rendered") if index else None
    ranks: dict[str | None, int | None] = {}
    content: dict[str, tuple] = {}

    def rank(r: Rule) -> int | None:
        sym = _symptom(r)
        if sym not in ranks:
            ranks[sym] = _rank(engine, sym)
        return ranks[sym]

    def content_of(r: Rule) -> tuple:
        got = content.get(r.name)
        if got is None:
            got = content[r.name] = (r.name, r.match_re, _symptom(r), rank(r), tuple(r.sources or ()))
        return got

    for a, b, cofire in candidate_pairs(rules, hits, bool(cfg["overlap_all_pairs"]), checkpoint, cfg, index):
        if focus is not None and a.name not in focus and b.name not in focus:
            continue
        if checkpoint is not None:
            checkpoint()  # the caller may pause us here (the language server, while an edit is analysed)
        witness, method = None, None
        if cofire is not None:
            witness, method = scan.text[cofire], ("sample" if cofire < scan.cut else "test line")
        ha, hb = hits.get(a.name) or _EMPTY, hits.get(b.name) or _EMPTY
        # a real line one matches and the other does not (disproves containment)
        only_a, only_b = not ha <= hb, not hb <= ha
        key = None
        if memo is not None:
            key = (content_of(a), content_of(b), witness, method, only_a, only_b, settings_key)
            got = memo.get(key, _NONE)
            if got is not _NONE:
                if got is not None:
                    out.append(_rerender(rendered, key, got, a, b))
                continue
        found = _pair_finding(a, b, witness, method, only_a, only_b, budget, rep, shared, rank)
        if memo is not None:
            memo[key] = found
        if found is not None:
            out.append(_render(found, a, b))
    return out


_EMPTY: frozenset = frozenset()


def _rerender(rendered: dict, key: tuple, found: tuple, a: Rule, b: Rule) -> Diagnostic:
    """`_render`, reusing the Diagnostic of the last lint when its two places did not
    move (most of a corpus after an edit: only the edited file's lines move)."""
    here, there = (a, b) if found[1] else (b, a)
    d = rendered.get(key)
    if d is not None and d.span == _where(here) and d.related[0].span == _where(there):
        return d
    d = rendered[key] = _render(found, a, b)
    return d


def _render(found: tuple, a: Rule, b: Rule) -> Diagnostic:
    """A finished finding (`_pair_finding`) at the current places of its two rules."""
    code, first_is_a, message, related, data = found
    here, there = (a, b) if first_is_a else (b, a)
    return Diagnostic(code, message, _where(here), related=(Related(_where(there), related),), data=dict(data))


def _pair_finding(a: Rule, b: Rule, witness: str | None, method: str | None, only_a: bool, only_b: bool,
                  budget: int, rep: int, shared: int, rank: Callable[[Rule], int | None]) -> tuple | None:
    """The RK306 / RK307 finding of one candidate pair, as (code, located at `a`?,
    message, the related place's message, data), or None: a pure function of the
    two rules' content, the co-firing witness (`witness`, `method`) and whether each
    matches a real line the other does not (`only_a`, `only_b`)."""

    def nfa(r: Rule) -> OV.NFA | None:
        return _nfa(r.match_re, rep)

    def supported(r: Rule) -> bool:
        """Does the exact search handle this pattern?  Memoized apart from the NFA itself
        (and kept on disk): with the searches memoized, no NFA needs building at all."""
        t = _MEMO.table("nfa-ok")
        key = (r.match_re, rep)
        got = t.get(key)
        if got is None:
            got = t[key] = nfa(r) is not None
        return got

    def search(kind: str, fn, x: Rule, y: Rule, *more):
        return _memo_search(kind, lambda *_: fn(nfa(x), nfa(y), *more), x.match_re, y.match_re, *more)

    both = supported(a) and supported(b)
    if witness is None and both:
        res = search("overlap", OV.overlap, a, b, budget, rep, shared)
        if res.found and res.witness is not None and _confirm(res.witness, a, b):
            witness, method = res.witness, "exact" if res.exact else "approximate"
    if witness is None:
        return None
    # shadowing: is one contained in the other?
    shadow = None
    if both:
        for big, small, small_only in ((a, b, only_b), (b, a, only_a)):
            # cheap exact disproof first: a line `small` matches that `big` does not
            short = _memo_search("shortest", lambda *_, s=small: OV.shortest_line(nfa(s), budget, rep),
                                 small.match_re, budget, rep)
            if short is not None and compile_pattern(big.match_re).search(short) is None:
                continue
            if small_only:
                continue  # a real line `small` matches and `big` does not
            c = search("contains", OV.contains, big, small, budget, rep)
            if c.found is True and c.exact:
                shadow = (big, small)
                break
    ra, rb = rank(a), rank(b)
    if shadow:
        big, small = shadow
        rbig, rsmall = rank(big), rank(small)
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
        win = big if (rbig or 0) >= (rsmall or 0) else small
        return ("RK307", small is a,
                f"every line `{small.name}` matches is also matched by `{big.name}` (e.g. {witness!r}); {verdict}",
                f"`{big.name}` is defined here",
                {"rule": small.name, "other": big.name, "witness": witness, "method": method,
                 "fix": _fix(witness, win), "fix_case": _fix_case(witness, small, big, win)})
    later, first = (b, a)
    win = first if (ra or 0) >= (rb or 0) else later
    return ("RK306", False,
            f"`{later.name}` and `{first.name}` both match {witness!r}"
            + (f" ({_symptom(first)} rank {ra} vs {_symptom(later)} rank {rb})" if ra is not None and rb is not None else "")
            + _WITNESS_NOTE.get(method or "", ""),
            f"`{first.name}` is defined here",
            {"rule": later.name, "other": first.name, "witness": witness, "method": method,
             "fix": _fix(witness, win), "fix_case": _fix_case(witness, later, first, win)})


# ---- the whole lint ---------------------------------------------------------------------------------

def _moved_to(d: Diagnostic, own: Related) -> Diagnostic:
    """`d` located at its related place `own` (a rule of the user's), its own place as the related one."""
    import dataclasses

    rule = (d.data or {}).get("rule")
    rest = tuple(r for r in d.related if r is not own)
    here = Related(d.span, f"`{rule}` is defined here" if rule else "also here") if d.span is not None else None
    return dataclasses.replace(d, span=own.span, related=((here,) if here else ()) + rest)


def lint_corpus(load: LoadResult, sample: bytes | None = None, config: Mapping[str, Any] | None = None,
                test_results: Iterable[Any] | None = None, cost: bool = True,
                checkpoint: Callable[[], None] | None = None,
                focus: Callable[[str], bool] | None = None, index: bool = True) -> list[Diagnostic]:
    """Every lint finding of a loaded corpus (see the module docstring).

    config: full settings (`analysis.settings.settings()`), default the defaults.
    test_results: results of running the corpus's tests; adds RK402 / RK403.
    cost: measure per-rule cost (RK308); off for reproducible output.
    focus: which files are linted (a predicate on a rule's file; default: all).  The
    other rules (the bundled corpus under a user's own) are context: a user rule that
    overlaps one of them is reported, their own findings are not (and not searched).
    index: False runs the definition (every pair, one scan of everything; no memo of
    pairs): what the indexed lint is tested against."""
    with _LOCK:
        return _lint(load, sample, config, test_results, cost, checkpoint, focus, index)


def _lint(load: LoadResult, sample: bytes | None, config: Mapping[str, Any] | None,
          test_results: Iterable[Any] | None, cost: bool, checkpoint: Callable[[], None] | None,
          focus: Callable[[str], bool] | None, index: bool) -> list[Diagnostic]:
    cfg = dict((config or default_settings())["lint"])
    cov_cfg = (config or default_settings())["coverage"]
    data = _default_sample() if sample is None else sample
    rules = _lint_rules(load)

    def mine(span: Span | None) -> bool:
        return focus is None or (span is not None and focus(span.file))

    own = [r for r in rules if mine(r.span)] if focus is not None else rules
    diags: list[Diagnostic] = []
    if own:
        from rulekit.extract.accel import Accelerator

        extra = [t.line for r in rules for t in r.tests]
        extra += [ln for c in load.ruleset.job_tests for o in c.observations for ln in o.lines]
        pats = [r.match_re for r in rules]
        if index:
            analysis = lintscan.analyses(pats, data, _MEMO.table("factors"), _MEMO.table("superset"),
                                         _MEMO.table("keycount"))
            scan = scan_incremental(rules, data, extra, lambda: Accelerator(pats, sample=data))
        else:
            acc = Accelerator(pats, sample=data)
            analysis = acc.analysis
            scan = scan_sample(rules, acc, data, extra)
        if focus is not None:  # (the analysis is of every rule's pattern: keep it beside its rule)
            analysis = [a for r, a in zip(rules, analysis) if mine(r.span)]
        diags += literal_checks(own, analysis, cfg)
        diags += broad_checks(own, scan, cfg)
        if cost:
            diags += cost_checks(own, data, cfg)
        if cfg["overlap"]:
            names = {r.name for r in own} if focus is not None else None
            diags += overlap_checks(rules, scan, cfg, load.engine, checkpoint, names, index)
    diags += [d for d in load.diagnostics if d.code == "RK205"]
    if test_results is not None and cfg["coverage"] and load.engine is not None:
        cov = static_coverage(load.engine, cov_cfg) + run_coverage(load.engine, test_results, cov_cfg)
        diags += [d for d in cov if d.code in ("RK402", "RK403")]
    if focus is not None:  # a finding between a rule of one's own and a context rule sits at one's own
        diags = [d if mine(d.span) else _moved_to(d, next(r for r in d.related if mine(r.span)))
                 for d in diags if mine(d.span) or any(mine(r.span) for r in d.related)]
    return sorted(apply_suppressions(diags, load.texts), key=Diagnostic.sort_key)
