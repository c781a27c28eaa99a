"""The extractor acceleration structure: many rule regexes over byte chunks of logs.

`Accelerator(patterns).scan(chunk)` returns exactly what `scan.NaiveScanner` returns
(every (line_start, line_end, pattern_index, groupdict), sorted) without a Python
loop over lines or rules on the hot path:

1. *Gate.*  One pass over the whole chunk finds the lines some rule may match:
   a pyre2 multi-line alternation of every rule's byte-level superset form
   (`accel_superset`; compiled with an explicit `max_mem`, after `re2.purge()`),
   or, with the optional `hyperscan` extra, a Hyperscan block-mode database that
   also says which rules fired.  After a gate hit the search resumes at the next
   line, so a match running across lines can never hide a real hit.
2. *Candidates.*  On a pyre2 gate-hit line only, an Aho-Corasick automaton
   (ahocorasick-rs, DFA, overlapping) over the lower-cased line maps each rule's
   chosen key literal (`literals.choose_keys`: rarest in a benign sample) to the
   rule, which stays a candidate only if the line also holds one literal of each
   of its other required factors (plain `in` tests); the few rules without any
   key literal are candidates when a small pyre2 alternation of just those rules
   matches the line.
3. *Confirm.*  Each candidate runs its own RE2 pattern on the decoded line, which
   also yields the named captures (on an ASCII line, an ASCII pattern runs as its
   bytes twin: same meaning there, many times faster in pyre2).  A line of
   `LONG_LINE` bytes or more is searched in place (a view of the chunk, never a
   copy per candidate), and when it is valid UTF-8 but not ASCII, by the pattern
   compiled as bytes in RE2's UTF-8 mode (what pyre2 runs a str pattern on, without
   the decoded text and its re-encoding: a 200 MB line is not held three more times).

Line semantics match the naive loop: a trailing `\\r` is removed (CRLF chunks are
rewritten `\\r\\n` -> `\\n\\n`, same length, and the phantom empty lines skipped);
invalid UTF-8 needs no special path: the gate forms also accept the bytes a U+FFFD
replaced, and confirmation decodes the line with replacement.
`analysis` reports, per pattern, the key, whether it is prefilterable and why not,
weak-key status, the engine and the match rate on the benign sample (lint and the
language server render it; `accel_report` adds overlaps and costs).  One
Accelerator may be shared by threads.  No I/O except reading the packaged benign
sample and the user's cache folder (never the package folder): the compiled
Hyperscan database and the per-pattern analysis (`rulekit.extract.diskcache`).
Backends: "auto" (Hyperscan when installed), "re2", "hyperscan";
`scan.make_scanner` also honours RULEKIT_SCANNER=naive|re2|hyperscan|auto.
"""
from __future__ import annotations

import hashlib
import io
import os
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Sequence

import ahocorasick_rs
import re2 as _re2

from rulekit.extract import literals as L
from rulekit.extract.superset import raw_gate_form, superset_of
from rulekit.extract.diskcache import _ENV as _FROM_ENV
from rulekit.extract.regex import MAX_MEM, compile_big, compile_pattern
from rulekit.extract.spans import LINE_STEP, LONG_LINE, span_is_utf8, span_isascii

try:  # optional extra: pip install rulekit[hyperscan]
    import hyperscan as _hs
except ImportError:  # pragma: no cover - depends on the install
    _hs = None

WEAK_KEY_RATE = 0.005  # a key on more than 0.5 % of sample lines does not narrow enough
# (a key of only MIN_KEY = 3 bytes is weak too: common on real logs whatever the sample says)
BACKENDS = ("auto", "re2", "hyperscan")
_NONASCII_LINE = r"[\x80-\xff]"


def hyperscan_available() -> bool:
    return _hs is not None


@lru_cache(maxsize=1)
def default_sample() -> bytes:
    """The benign log sample shipped with the package (used to rank key literals)."""
    try:
        return resources.files("rulekit").joinpath("data/benign_sample.log").read_bytes()
    except (FileNotFoundError, OSError):
        return b""


@dataclass
class PatternAnalysis:
    index: int
    pattern: str
    factors: list[frozenset] | None  # required literal factors (None: unparsable)
    key: frozenset | None  # the chosen factor (OR of keys), None: no usable literal
    prefilterable: bool  # has a key literal that narrows it (else: tried on every gate-hit line)
    reason: str  # why not prefilterable ("" when it is)
    weak_key: bool  # key on > WEAK_KEY_RATE of sample lines, or only 3 bytes long
    key_sample_rate: float  # fraction of sample lines holding the key
    engine: str  # "re2" or "hyperscan": the engine of the gate that covers it
    gate_form: str | None  # the byte-level superset pattern used by the gate
    broad_rate: float | None = None  # fraction of benign-sample lines the rule matches (None: no sample)

    @property
    def key_text(self) -> str | None:
        if not self.key:
            return None
        return " | ".join(sorted(k.decode("utf-8", "replace") for k in self.key))


def pattern_analyses(patterns: Sequence[str], all_factors, choices, supersets) -> list[PatternAnalysis]:
    """Per pattern: its factors, chosen key and gate form made into a `PatternAnalysis`
    (the accelerator's, and the lint's without building one)."""
    out = []
    for i, p in enumerate(patterns):
        ch, ss = choices[i], supersets[i]
        reason = ""
        weak = ch.factor is not None and (ch.rate > WEAK_KEY_RATE or min(len(k) for k in ch.factor) <= L.MIN_KEY)
        if all_factors[i] is None:
            reason = "Python's parser cannot read the pattern, so no literal can be extracted"
        elif ch.factor is None:
            reason = "no literal of at least 3 bytes is required by every match"
        if ss.text is None and not reason:
            reason = ss.reason
        out.append(PatternAnalysis(
            index=i, pattern=p, factors=all_factors[i], key=ch.factor,
            prefilterable=not reason, reason=reason, weak_key=weak,
            key_sample_rate=ch.rate, engine="re2", gate_form=ss.text))
    return out


@dataclass
class _Gate:
    """A pyre2 gate over a subset of the rules."""
    regex: object  # pyre2 pattern
    members: tuple[int, ...]
    always: tuple[int, ...]  # members without a usable key: candidates on every hit line...
    residual: object | None  # ...when this pyre2 alternation of their gate forms matches it
    ac: object | None  # BytesAhoCorasick over keys
    key_rules: list[tuple[int, ...]] = field(default_factory=list)


class Accelerator:
    """Exact fast multi-pattern scanner; see the module docstring."""

    def __init__(self, patterns: Sequence[str], sample: bytes | None = None, backend: str = "auto",
                 cache_dir: Any = _FROM_ENV):
        # cache_dir: the folder of the on-disk caches (EngineOptions.cache_dir; None: off); default: the environment's
        self._cache_dir = cache_dir
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; use one of {BACKENDS}")
        if backend == "hyperscan" and _hs is None:
            raise RuntimeError("backend 'hyperscan' requested but the hyperscan module is not installed")
        self.patterns = list(patterns)
        # compiled on first use: a job's lines reach only some of the rules
        self.compiled = _Lazy(self.patterns, compile_pattern)
        self._tls = threading.local()
        # On an ASCII line RE2's Latin-1 (bytes) mode means exactly what its UTF-8
        # mode means, and pyre2 confirms bytes many times faster than str.
        self.compiled_ascii = _Lazy(self.patterns, _bytes_twin)
        # and on a long line of valid UTF-8, RE2's UTF-8 mode on its bytes means what the str
        # pattern means on its text (pyre2 runs a str pattern on the text encoded back to UTF-8)
        self.compiled_utf8 = _Lazy(self.patterns, _utf8_twin)
        # whether a pattern has named groups, read from the form confirmation compiles
        # anyway (the bytes twin on ASCII lines): never a third compile
        self._named = _Lazy(list(range(len(self.patterns))), self._has_names)
        if sample is None:
            sample = default_sample()
        self.backend = "hyperscan" if (backend == "hyperscan" or (backend == "auto" and _hs is not None)) else "re2"

        n = len(self.patterns)
        all_factors, choices, supersets = _derive(self.patterns, sample, cache_dir)
        self._analysis: list[PatternAnalysis] = pattern_analyses(self.patterns, all_factors, choices, supersets)

        # split rules between Hyperscan (gate says which rule) and pyre2 gates
        re2_members = list(range(n))
        self._hs_db = None
        self._hs_members: set[int] = set()
        if self.backend == "hyperscan":
            self._build_hyperscan(supersets)
            re2_members = [i for i in range(n) if i not in self._hs_members]
        # the rule's other required factors: a key-literal candidate lacking one of them
        # cannot match, so it is never confirmed (the same lower-cased-bytes soundness as keys)
        self._extra_factors: list[tuple[tuple[bytes, ...], ...]] = [
            tuple(tuple(f) for f in a.factors if f != a.key) if a.prefilterable and a.key and a.factors else ()
            for a in self._analysis]
        self._gate = self._build_re2_gate(re2_members, supersets) if re2_members else None
        self._sample = sample
        self._broad_measured = False

    def _has_names(self, i: int) -> bool:
        rx = self.compiled_ascii[i]
        return bool((rx if rx is not None else self.compiled[i]).groupindex)

    @property
    def analysis(self) -> list[PatternAnalysis]:
        """Per-pattern analysis for lint and the language server; `broad_rate` is
        measured here, on first use (extraction never needs it)."""
        if not self._broad_measured:
            self._broad_measured = True
            if self._sample:
                self._measure_broad(self._sample)
        return self._analysis

    @analysis.setter
    def analysis(self, value: list[PatternAnalysis]) -> None:
        self._analysis = value

    def _measure_broad(self, sample: bytes) -> None:
        """broad_rate: the fraction of sample lines each rule matches (a few ms)."""
        lines: list[set[int]] = [set() for _ in self.patterns]
        for s, _e, i, _gd in self.scan(sample):
            lines[i].add(s)
        total = L.count_lines(sample)
        for a in self._analysis:
            a.broad_rate = len(lines[a.index]) / total if total else 0.0

    # ------------------------------------------------------------------ building
    def _build_hyperscan(self, supersets) -> None:
        exprs, ids, flags = [], [], []
        for i, ss in enumerate(supersets):
            if ss.text is None:
                continue
            exprs.append(ss.text.encode("ascii"))
            ids.append(i)
            flags.append(_hs.HS_FLAG_MULTILINE)
        if not exprs:
            return
        accepted = self._hs_compile(exprs, ids, flags)
        self._hs_members = set(accepted)
        for i in accepted:
            # Hyperscan names the rule itself, so its key literal is not used here;
            # `prefilterable` keeps describing the rule (what lint reports), not the engine
            self._analysis[i].engine = "hyperscan"

    def _hs_compile(self, exprs, ids, flags) -> list[int]:
        """Compile what Hyperscan accepts; patterns it rejects (found by bisection,
        its error does not name the expression) stay with pyre2."""
        def compiles(idx):
            db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
            try:
                db.compile(expressions=[exprs[j] for j in idx], ids=[ids[j] for j in idx],
                           elements=len(idx), flags=[flags[j] for j in idx])
            except _hs.error:
                return None
            return db

        def accepted(idx, known_bad=False):
            """The expressions of `idx` Hyperscan accepts (`known_bad`: idx as a whole
            was already refused, so it is split without compiling it again)."""
            if not idx:
                return []
            if not known_bad and compiles(idx) is not None:
                return idx
            if len(idx) == 1:
                return []
            mid = len(idx) // 2
            return accepted(idx[:mid]) + accepted(idx[mid:])

        cache = _hs_cache_path(exprs, flags, self._cache_dir)
        db = _hs_cache_load(cache)
        if db is not None:
            ok = [int(j) for j in db[1]]
            db = db[0]
        else:
            # one compile when Hyperscan takes every expression (the usual case); when it
            # refuses some, bisection finds them and the accepted ones are compiled once more
            everything = list(range(len(exprs)))
            db = compiles(everything)
            ok = everything
            if db is None:
                ok = accepted(everything, known_bad=True)
                db = compiles(ok) if ok else None
            if db is not None:
                _hs_cache_store(cache, db, ok)
        if db is None:
            return []
        self._hs_db = db
        self._hs_scratch = _hs.Scratch(db)
        return [ids[j] for j in ok]

    def _build_re2_gate(self, members: list[int], supersets) -> _Gate:
        branches: list[str] = []
        always: list[int] = []
        nonascii = False
        for i in members:
            ss, a = supersets[i], self._analysis[i]
            if ss.text is not None:
                branches.append(ss.text)
            elif not ss.exact_parse:
                branches.append(raw_gate_form(self.patterns[i]))
                nonascii = True
            else:
                branches.append("^")  # matches the empty string: every line
            if not a.prefilterable:
                always.append(i)
        if nonascii:
            branches.append(_NONASCII_LINE)
        regex = _compile_gate(branches)
        keys: dict[bytes, list[int]] = {}
        for i in members:
            a = self._analysis[i]
            if a.prefilterable and a.key:
                for k in a.key:
                    keys.setdefault(k, []).append(i)
        ac = None
        key_rules: list[tuple[int, ...]] = []
        if keys:
            klist = list(keys)
            ac = ahocorasick_rs.BytesAhoCorasick(klist, implementation=ahocorasick_rs.Implementation.DFA)
            key_rules = [tuple(keys[k]) for k in klist]
        residual = None
        if always:
            res_branches = [branches[members.index(i)] for i in always]
            if nonascii and any(not supersets[i].exact_parse for i in always):
                res_branches.append(_NONASCII_LINE)
            residual = _compile_gate(res_branches)
        return _Gate(regex, tuple(members), tuple(always), residual, ac, key_rules)

    # ------------------------------------------------------------------ scanning
    def scan(self, chunk: bytes, allowed: "frozenset[int] | None" = None) -> list[tuple[int, int, int, dict]]:
        """Every (line_start, line_end, pattern_index, groupdict) of `chunk`, as NaiveScanner;
        with `allowed`, only the hits of those patterns (the others are never confirmed)."""
        if not chunk:
            return []
        buf = chunk
        # (a lone `\r`, as progress bars print, needs no rewrite: a copy of a chunk that may be one long line)
        crlf = b"\r\n" in chunk or chunk.endswith(b"\r")
        if crlf:
            buf = chunk.replace(b"\r\n", b"\n\n")
            if buf.endswith(b"\r"):
                buf = buf[:-1] + b"\n"
        return self._scan_buf(buf, chunk if crlf else None, allowed)

    def _scan_buf(self, buf: bytes, orig: bytes | None, allowed: "frozenset[int] | None" = None):
        """Scan `buf`.  `orig`: the chunk before the CRLF rewrite (to map line ends
        back and skip the phantom empty lines)."""
        per_line: dict[int, set[int]] = {}
        line_end: dict[int, int] = {}
        n = len(buf)
        if self._hs_db is not None:
            self._hs_lines(buf, per_line, line_end)
        if self._gate is not None:
            self._gate_lines(buf, per_line, line_end)
        # Candidates are confirmed pattern by pattern, not line by line: one pattern's RE2
        # state stays in the CPU caches across its lines (line order, switching among
        # hundreds of patterns, is ~3x slower a search), then the hits are put back in
        # (line, pattern) order.
        # (pattern, line start) pairs and the hits' (line start, pattern) order are packed
        # into ints: a list of ints sorts several times faster than one of tuples
        lb = max(n.bit_length(), 1)  # bits of a line start
        pb = max(len(self.patterns).bit_length(), 1)  # bits of a pattern index
        lmask = (1 << lb) - 1
        work: list[int] = []  # pattern << lb | line start
        for ls in per_line:
            if orig is not None and ls > 0 and orig[ls - 1] == 13:
                continue  # phantom line of a CRLF rewrite
            cands = per_line[ls]
            if allowed is not None:
                cands = cands & allowed
            for i in cands:
                work.append(i << lb | ls)
        work.sort()
        hits = []
        order: list[int] = []  # each hit's line start << pb | pattern
        compiled = self.compiled
        twins = self.compiled_ascii
        named = self._named
        texts: dict[int, str] = {}  # line start -> decoded text (non-ASCII lines, and lines without a twin)
        long_ascii: dict[int, bool] = {}  # long line start -> whether it is ASCII
        utf8_ok: dict[int, bool] = {}  # long line start -> whether it is valid UTF-8
        utf8s = self.compiled_utf8
        view = None  # of `buf`: a long line is searched in place, not copied once per candidate
        last = -1
        for w in work:
            i, ls = w >> lb, w & lmask
            if i != last:
                last = i
                twin, rx, has_names = twins[i], None, named[i]  # (the str form only when a line needs it)
            le = line_end[ls]
            if le - ls < LONG_LINE:
                raw = buf[ls:le]
                ascii_ = raw.isascii()
            else:
                if view is None:
                    view = memoryview(buf)
                raw = view[ls:le]
                ascii_ = long_ascii.get(ls)
                if ascii_ is None:
                    ascii_ = long_ascii[ls] = span_isascii(buf, ls, le)
            if twin is not None and ascii_:
                if has_names:
                    m = twin.search(raw)
                    if m is None:
                        continue
                    caps = {k: (v.decode("ascii") if v is not None else None) for k, v in m.groupdict().items()}
                elif twin.contains(raw):  # no captures wanted: RE2 need not find the groups
                    caps = {}
                else:
                    continue
            else:
                u8 = None
                if le - ls >= LONG_LINE:  # searched as it is: neither decoded nor encoded back (`_utf8_twin`)
                    valid = ascii_ or utf8_ok.get(ls)
                    if valid is None:
                        valid = utf8_ok[ls] = span_is_utf8(buf, ls, le)
                    if valid:
                        u8 = utf8s[i]
                if u8 is not None:
                    m = u8.search(raw)
                    if m is None:
                        continue
                    caps = {k: (v.decode("utf-8") if v is not None else None) for k, v in m.groupdict().items()}
                else:
                    text = texts.get(ls)
                    if text is None:
                        text = texts[ls] = str(raw, "utf-8", "replace")
                    if rx is None:
                        rx = compiled[i]
                    m = rx.search(text)
                    if m is None:
                        continue
                    caps = m.groupdict()
            end = le + 1 if orig is not None and le < n and orig[le] == 13 else le
            hits.append((ls, end, i, caps))
            order.append(ls << pb | i)
        if len(hits) < 2:
            return hits
        return [hits[j] for j in sorted(range(len(hits)), key=order.__getitem__)]

    def _gate_lines(self, buf: bytes, per_line, line_end) -> None:
        gate = self._gate
        search = gate.regex.search
        ac = gate.ac
        key_rules = gate.key_rules
        residual = gate.residual.search if gate.residual is not None else None
        always = gate.always
        extra = self._extra_factors
        n = len(buf)
        pos = 0
        while pos < n:
            m = search(buf, pos)
            if m is None:
                break
            st = m.start()
            ls = buf.rfind(b"\n", 0, st) + 1
            if ls >= n:
                break
            le = buf.find(b"\n", st)
            if le < 0:
                le = n
            cands = per_line.get(ls)
            if cands is None:
                cands = per_line[ls] = set()
                line_end[ls] = le
            line = buf[ls:le] if le - ls < LONG_LINE else memoryview(buf)[ls:le]  # (a long line: a view)
            if ac is not None:
                low = line.lower() if le - ls < LONG_LINE else _lower(buf, ls, le)
                for kid, _s, _e in ac.find_matches_as_indexes(low, overlapping=True):
                    for r in key_rules[kid]:
                        if r in cands:
                            continue
                        for f in extra[r]:  # (plain loops: a generator per candidate costs more than it saves)
                            for k in f:
                                if k in low:
                                    break
                            else:
                                break  # no literal of this factor: the rule cannot match the line
                        else:
                            cands.add(r)
            if residual is not None and residual(line) is not None:
                cands.update(always)
            pos = le + 1

    def _hs_lines(self, buf: bytes, per_line, line_end) -> None:
        found: list[int] = []  # match end << pb | rule: ints sort several times faster than tuples
        append = found.append
        pb = max(len(self.patterns).bit_length(), 1)
        rmask = (1 << pb) - 1

        def on_match(rule_id, _frm, to, _flags, _ctx):
            append(to << pb | rule_id)

        scratch = getattr(self._tls, "scratch", None)
        if scratch is None:  # Hyperscan scratch space must not be shared between threads
            scratch = self._tls.scratch = self._hs_scratch.clone()
        # block mode calls `on_match` synchronously; the local name keeps it referenced
        self._hs_db.scan(buf, match_event_handler=on_match, scratch=scratch)
        if not found:
            return
        found.sort()
        n = len(buf)
        cur_ls, cur_le = -1, -1
        cands: set[int] = set()
        for x in found:
            to, rid = x >> pb, x & rmask
            last = to - 1 if to > 0 else 0
            if last > cur_le or cur_ls < 0 or last < cur_ls:
                cur_ls = buf.rfind(b"\n", 0, last) + 1
                cur_le = buf.find(b"\n", last)
                if cur_le < 0:
                    cur_le = n
                cands = per_line.get(cur_ls)
                if cands is None:
                    cands = per_line[cur_ls] = set()
                    line_end[cur_ls] = cur_le
            cands.add(rid)


def _lower(buf: bytes, start: int, end: int) -> bytes:
    """`buf[start:end].lower()` of a long line, lower-cased `LINE_STEP` bytes at a time
    into one buffer (no copy of the line besides the result)."""
    out = io.BytesIO()
    for b in range(start, end, LINE_STEP):
        out.write(buf[b:min(end, b + LINE_STEP)].lower())
    return out.getvalue()


def _hs_cache_path(exprs, flags, base: Any = _FROM_ENV):
    """Where a compiled Hyperscan database for these expressions is cached: the
    user's cache folder (XDG_CACHE_HOME or ~/.cache), never the package folder.
    RULEKIT_CACHE_DIR overrides it; an empty value disables the cache.  `base`: the
    folder the engine options name (None: off); default: the environment's."""
    from rulekit.extract.diskcache import cache_dir

    if base is _FROM_ENV:
        base = cache_dir()
    if base is None:
        return None
    h = hashlib.sha256()
    h.update(repr((getattr(_hs, "__version__", ""), flags)).encode())
    for e in exprs:
        h.update(e + b"\0")
    return os.path.join(base, f"hs-{h.hexdigest()[:32]}.db")


def _hs_cache_load(path):
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path, "rb") as f:
            header = f.readline()
            blob = f.read()
        ok = [int(x) for x in header.split()] if header.strip() else []
        return _hs.loadb(blob, _hs.HS_MODE_BLOCK), ok
    except Exception:  # a corrupt or foreign cache entry: recompile
        return None


def _hs_cache_store(path, db, ok) -> None:
    if not path:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(" ".join(map(str, ok)).encode() + b"\n")
            f.write(_hs.dumpb(db))
        os.replace(tmp, path)
    except OSError:
        pass  # the cache is an optimisation only


class _Lazy:
    """A list of `make(pattern)` values, each computed on first indexing."""

    __slots__ = ("_patterns", "_make", "_done")
    _UNSET = object()

    def __init__(self, patterns: list[str], make):
        self._patterns = patterns
        self._make = make
        self._done: list = [self._UNSET] * len(patterns)

    def __len__(self) -> int:
        return len(self._patterns)

    def __getitem__(self, i: int):
        v = self._done[i]
        if v is self._UNSET:
            v = self._done[i] = self._make(self._patterns[i])
        return v


def _derive(patterns: list[str], sample: bytes, base: Any = _FROM_ENV) -> tuple[list, list, list]:
    """(literal factors, chosen keys, gate supersets) per pattern: pure functions
    of the patterns and the sample, cached on disk (`rulekit.extract.diskcache`)
    because deriving them is most of a cold start."""
    import rulekit.extract.diskcache as cache

    key = cache.make_key(cache.code_fingerprint(),
                         hashlib.sha256(sample).hexdigest(), "\0".join(patterns))
    got = cache.load("scan", key, base)
    if isinstance(got, tuple) and len(got) == 3 and all(len(x) == len(patterns) for x in got):
        return got
    all_factors = [L.factors_of(p) for p in patterns]
    choices = L.choose_keys(all_factors, sample)
    supersets = [superset_of(p, ch.factor) for p, ch in zip(patterns, choices)]
    cache.store("scan", key, (all_factors, choices, supersets), base)
    return all_factors, choices, supersets


def _bytes_twin(pattern: str):
    """The rule compiled as a bytes (Latin-1 mode) pattern, for ASCII lines; None
    when that could differ: a non-ASCII pattern (under `(?i)`, LONG S matches "s"
    in UTF-8 mode but not as Latin-1 bytes) or one RE2 rejects as bytes."""
    if not pattern.isascii():
        return None
    try:
        return compile_pattern(pattern.encode("utf-8"))
    except Exception:  # re2.error or a fallback exception: use the str pattern
        return None


def _utf8_twin(pattern: str):
    """The rule compiled as bytes in RE2's UTF-8 mode, for long lines of valid UTF-8
    (what pyre2 does with a str pattern, without the decoded line and its UTF-8 copy:
    two to five times the line's bytes); None when RE2 rejects it so."""
    try:
        return _re2.compile(pattern.encode("utf-8"), _re2.UNICODE)
    except Exception:  # re2.error or a fallback exception: use the str pattern
        return None


def _compile_gate(branches: list[str]):
    text = "(?m)" + "|".join("(?:" + b + ")" for b in branches)
    return compile_big(text.encode("latin-1"), max_mem=max(MAX_MEM, len(branches) * (128 << 10)))


def forced_backend() -> str:
    """Backend forced by RULEKIT_SCANNER (naive|re2|hyperscan|auto), default auto
    (`EngineOptions.scanner`; an engine passes its own)."""
    from rulekit.config import EngineOptions

    return EngineOptions.from_env().scanner
