"""Exact overlap and shadowing of two rule regexes (RK306 / RK307 witnesses).

Both patterns are compiled from Python's parse tree (`re._parser`, the same
reader `rulekit.extract.literals` uses) into NFAs over code-point intervals with RE2's
semantics for the constructs rule patterns use: literals, classes (`\\d \\w \\s`
are ASCII, as in RE2), `.`, alternation, groups, `?` `*` `+` `{m,n}`, `(?i)`,
`^`, `$`, `\\b`, `\\B`.  Lines never contain a newline.

* `overlap(a, b)` searches the product automaton for a line on which a match of
  `a` and a match of `b` share at least 3 consecutive characters that both consume
  through a literal or a narrow class (at most 32 code points: `\\d`, `[0-9a-f]`, a letter
  under `(?i)`).  Two matches side by side (`NCCL WARN` and `Xid` pasted
  together), or one pasted into the other's `.*` / `\\S+`, do not count: any
  two patterns can be combined that way, which says nothing about the rules.  Leading and trailing nullable parts (`.*`) are dropped first;
  they do not change which lines a pattern matches.  The search is breadth first,
  so the witness is short; it is exact: when it says "no overlap" there is none.
* `contains(a, b)` decides whether every line `b` matches is also matched by `a`
  (b is shadowed by a), by an on-the-fly subset construction of `a`'s search
  automaton against `b`; it returns a counterexample line otherwise.

Counted repetition beyond `max_repeat` copies is over-approximated; such a
result is marked `exact=False` and every witness is confirmed on RE2 before it
is reported.  Each search has a state budget; past it the answer is `None`
(unknown).  Pure functions; no I/O.
"""
from __future__ import annotations

import re
import re._parser as sre_parse  # type: ignore[import-not-found]
import warnings
from collections import deque
from functools import lru_cache
from dataclasses import field

import re._constants as C  # type: ignore[import-not-found]

from rulekit.rules.records import dataclass

MAXCP = 0x10FFFF
NL = 10
Interval = tuple[int, int]
CharSet = tuple[Interval, ...]

UNIVERSE: CharSet = ((0, NL - 1), (NL + 1, MAXCP))
WORD: CharSet = ((48, 57), (65, 90), (95, 95), (97, 122))
DIGIT: CharSet = ((48, 57),)
SPACE: CharSet = ((9, 10), (12, 13), (32, 32))


class Unsupported(Exception):
    """A construct outside the corpus's regex class (RE2 rejects it anyway)."""


# ---- interval sets --------------------------------------------------------------------------

@lru_cache(maxsize=1 << 16)
def norm(iv) -> CharSet:
    iv = tuple(iv)
    out: list[list[int]] = []
    for lo, hi in sorted(iv):
        if lo > hi:
            continue
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((a, b) for a, b in out)


@lru_cache(maxsize=1 << 16)
def inter(a: CharSet, b: CharSet) -> CharSet:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


@lru_cache(maxsize=1 << 16)
def minus(a: CharSet, b: CharSet) -> CharSet:
    return inter(a, complement(b))


@lru_cache(maxsize=1 << 16)
def complement(a: CharSet) -> CharSet:
    out, prev = [], 0
    for lo, hi in a:
        if lo > prev:
            out.append((prev, lo - 1))
        prev = hi + 1
    if prev <= MAXCP:
        out.append((prev, MAXCP))
    return inter(tuple(out), UNIVERSE)


_PREFER = ((97, 122), (48, 57), (65, 90), (32, 32), (33, 126), (0x80, MAXCP), (0, MAXCP))


@lru_cache(maxsize=1 << 16)
def pick(cs: CharSet) -> int:
    """A readable representative of a non-empty set."""
    for pref in _PREFER:
        hit = inter(cs, (pref,))
        if hit:
            return hit[0][0]
    return cs[0][0]


@lru_cache(maxsize=1 << 16)
def _fold(cs: CharSet) -> CharSet:
    """Add the other case of every letter (simple case folding, as RE2's (?i))."""
    extra = []
    for lo, hi in cs:
        if hi - lo > 2000:
            # a wide range: add ASCII folds wholesale, leave the rest (already wide)
            for a, b, d in ((65, 90, 32), (97, 122, -32)):
                l2, h2 = max(lo, a), min(hi, b)
                if l2 <= h2:
                    extra.append((l2 + d, h2 + d))
            continue
        for c in range(lo, hi + 1):
            ch = chr(c)
            for o in {ch.lower(), ch.upper()}:
                if len(o) == 1 and o != ch:
                    extra.append((ord(o), ord(o)))
            if ch in "kK":
                extra.append((0x212A, 0x212A))
            if ch in "sS":
                extra.append((0x17F, 0x17F))
    return norm(tuple(cs) + tuple(extra))


# ---- NFA ------------------------------------------------------------------------------------

@dataclass
class NFA:
    trans: list[list[tuple[CharSet, int]]] = field(default_factory=list)
    eps: list[list[tuple[str | None, int]]] = field(default_factory=list)  # cond: None|bol|eol|b|B
    start: int = 0
    accept: int = 0
    exact: bool = True
    # the searches' closures and moves, per thread and context (pure functions of the NFA)
    memo: dict = field(default_factory=dict, compare=False, repr=False)

    def new(self) -> int:
        self.trans.append([])
        self.eps.append([])
        return len(self.trans) - 1


_CAT = {
    C.CATEGORY_DIGIT: DIGIT, C.CATEGORY_NOT_DIGIT: None, C.CATEGORY_SPACE: SPACE, C.CATEGORY_NOT_SPACE: None,
    C.CATEGORY_WORD: WORD, C.CATEGORY_NOT_WORD: None,
}
_NEG = {C.CATEGORY_NOT_DIGIT: DIGIT, C.CATEGORY_NOT_SPACE: SPACE, C.CATEGORY_NOT_WORD: WORD}


class _Builder:
    def __init__(self, nfa: NFA, max_repeat: int):
        self.nfa = nfa
        self.max_repeat = max_repeat

    def seq(self, items, s: int, icase: bool) -> int:
        for op, av in items:
            s = self.item(op, av, s, icase)
        return s

    def chars(self, cs: CharSet, s: int, icase: bool) -> int:
        t = self.nfa.new()
        cs = inter(_fold(cs) if icase else cs, UNIVERSE)
        if cs:
            self.nfa.trans[s].append((cs, t))
        return t

    def klass(self, items, icase: bool) -> CharSet:
        neg = False
        parts: list[Interval] = []
        for op, av in items:
            if op is C.NEGATE:
                neg = True
            elif op is C.LITERAL:
                parts.append((av, av))
            elif op is C.RANGE:
                parts.append((av[0], av[1]))
            elif op is C.CATEGORY:
                if av in _NEG:
                    parts.extend(complement(_NEG[av]))
                elif av in _CAT and _CAT[av] is not None:
                    parts.extend(_CAT[av])  # type: ignore[arg-type]
                else:
                    raise Unsupported(f"class category {av}")
            else:
                raise Unsupported(f"class item {op}")
        cs = norm(tuple(parts))
        if icase:
            cs = _fold(cs)
        return complement(cs) if neg else cs

    def item(self, op, av, s: int, icase: bool) -> int:
        n = self.nfa
        if op is C.LITERAL:
            return self.chars(((av, av),), s, icase)
        if op is C.NOT_LITERAL:
            t = n.new()
            n.trans[s].append((complement(_fold(((av, av),)) if icase else ((av, av),)), t))
            return t
        if op is C.ANY:
            t = n.new()
            n.trans[s].append((UNIVERSE, t))
            return t
        if op is C.IN:
            t = n.new()
            cs = inter(self.klass(av, icase), UNIVERSE)
            if cs:
                n.trans[s].append((cs, t))
            return t
        if op is C.BRANCH:
            t = n.new()
            for alt in av[1]:
                a = n.new()
                n.eps[s].append((None, a))
                e = self.seq(alt, a, icase)
                n.eps[e].append((None, t))
            return t
        if op is C.SUBPATTERN:
            _g, add, dele, sub = av
            ic = icase
            if add & re.IGNORECASE:
                ic = True
            if dele & re.IGNORECASE:
                ic = False
            return self.seq(sub, s, ic)
        if op in (C.MAX_REPEAT, C.MIN_REPEAT) or op is getattr(C, "POSSESSIVE_REPEAT", object()):
            lo, hi, sub = av
            if lo > self.max_repeat:
                lo = self.max_repeat
                hi = C.MAXREPEAT
                n.exact = False
            if hi is not C.MAXREPEAT and hi != C.MAXREPEAT and hi - lo > self.max_repeat:
                hi = C.MAXREPEAT
                n.exact = False
            for _ in range(lo):
                s = self.seq(sub, s, icase)
            if hi == C.MAXREPEAT:
                loop = n.new()
                n.eps[s].append((None, loop))
                e = self.seq(sub, loop, icase)
                n.eps[e].append((None, loop))
                return loop
            end = n.new()
            for _ in range(hi - lo):
                n.eps[s].append((None, end))
                s = self.seq(sub, s, icase)
            n.eps[s].append((None, end))
            return end
        if op is C.AT:
            t = n.new()
            cond = {C.AT_BEGINNING: "bol", C.AT_BEGINNING_STRING: "bol", C.AT_END: "eol", C.AT_END_STRING: "eol",
                    C.AT_BOUNDARY: "b", C.AT_NON_BOUNDARY: "B"}.get(av)
            if cond is None:
                raise Unsupported(f"anchor {av}")
            n.eps[s].append((cond, t))
            return t
        raise Unsupported(f"construct {op}")


def _nullable(op, av) -> bool:
    """Can this item match the empty string?  (Anchors are kept: they constrain.)"""
    if op in (C.MAX_REPEAT, C.MIN_REPEAT) or op is getattr(C, "POSSESSIVE_REPEAT", object()):
        return av[0] == 0 or all(_nullable(o, a) for o, a in av[2])
    if op is C.SUBPATTERN:
        return all(_nullable(o, a) for o, a in av[3])
    if op is C.BRANCH:
        return any(all(_nullable(o, a) for o, a in alt) for alt in av[1])
    return False


def core_items(tree) -> list:
    """The parse tree without leading/trailing nullable parts (`.*`, `(?P<body>.*)`,
    `(?:x)?`): the same lines are matched, and matches shrink to their core."""
    items = list(tree)
    while len(items) == 1 and items[0][0] is C.SUBPATTERN and not (items[0][1][1] or items[0][1][2]):
        items = list(items[0][1][3])
    while items and _nullable(*items[0]):
        items.pop(0)
    while items and _nullable(*items[-1]):
        items.pop()
    return items


def compile_nfa(pattern: str, max_repeat: int = 40) -> NFA:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = sre_parse.parse(pattern)
        except (re.error, OverflowError, RecursionError) as e:
            raise Unsupported(f"Python cannot parse the pattern: {e}") from None
    icase = bool(tree.state.flags & re.IGNORECASE)
    nfa = NFA()
    nfa.start = nfa.new()
    nfa.accept = _Builder(nfa, max_repeat).seq(core_items(tree), nfa.start, icase)
    return nfa


# ---- search ----------------------------------------------------------------------------------

ANYR, WORDR, NONWORDR, ENDR = 0, 1, 2, 3  # pending requirement on the next character
_NONWORD = complement(WORD)


def _meet(r: int, need: int) -> int | None:
    if r == ANYR:
        return need
    if need == ANYR or need == r:
        return r
    if {r, need} == {ENDR, NONWORDR}:
        return ENDR
    return None


_REQ_SETS: tuple = (UNIVERSE, WORD, inter(_NONWORD, UNIVERSE), None)  # by ANYR, WORDR, NONWORDR, ENDR


def _req_set(r: int) -> CharSet | None:
    return _REQ_SETS[r]


NARROW = 32  # a shared character must be consumed through a literal or a class this small
PRE, POST = -1, -2  # the search loops before and after a match


def _closure(nfa: NFA, threads, at_start: bool, prev_word: bool):
    """Epsilon closure of (state, requirement) threads in the given context (memoized
    on the NFA by the threads in their order: a tuple in the order the set it was made
    of iterates, so a search visits threads, and finds witnesses, as without the memo)."""
    key = (tuple(threads), at_start, prev_word)
    got = nfa.memo.get(key)
    if got is None:
        got = nfa.memo[key] = tuple(_closure_of(nfa, threads, at_start, prev_word))
    return got


def _closure_of(nfa: NFA, threads, at_start: bool, prev_word: bool):
    out = set()
    stack = list(threads)
    while stack:
        st, r = stack.pop()
        if (st, r) in out:
            continue
        out.add((st, r))
        if st == PRE:
            stack.append((nfa.start, r))
            continue
        if st == POST:
            continue
        if st == nfa.accept:
            stack.append((POST, r))
        for cond, t in nfa.eps[st]:
            if cond is None:
                stack.append((t, r))
            elif cond == "bol":
                if at_start:
                    stack.append((t, r))
            elif cond == "eol":
                r2 = _meet(r, ENDR)
                if r2 is not None:
                    stack.append((t, r2))
            else:
                need = (NONWORDR if prev_word else WORDR) if cond == "b" else (WORDR if prev_word else NONWORDR)
                r2 = _meet(r, need)
                if r2 is not None:
                    stack.append((t, r2))
    return out


def _moves(nfa: NFA, st: int, r: int):
    """(charset, target, inside) char transitions of one thread (memoized on the NFA)."""
    key = (st, r)
    got = nfa.memo.get(key)
    if got is None:
        got = nfa.memo[key] = tuple(_moves_of(nfa, st, r))
    return got


def _moves_of(nfa: NFA, st: int, r: int):
    allowed = _req_set(r)
    if allowed is None:
        return []
    if st in (PRE, POST):
        return [(allowed, st, False)]
    out = []
    for cs, t in nfa.trans[st]:
        c2 = cs if allowed is UNIVERSE else inter(cs, allowed)
        if c2:
            out.append((c2, t, _width(cs) <= NARROW))
    return out


@lru_cache(maxsize=1 << 16)
def _width(cs: CharSet) -> int:
    return sum(hi - lo + 1 for lo, hi in cs)


def _accepting(threads) -> bool:
    return any(st == POST and r in (ANYR, NONWORDR, ENDR) for st, r in threads)


@lru_cache(maxsize=1 << 16)
def _split_word(cs: CharSet) -> list[tuple[CharSet, bool]]:
    out = []
    w = inter(cs, WORD)
    nw = minus(cs, WORD)
    if w:
        out.append((w, True))
    if nw:
        out.append((nw, False))
    return out


@dataclass
class SearchResult:
    found: bool | None  # None: budget exhausted (unknown)
    witness: str | None = None
    exact: bool = True
    states: int = 0


def overlap(a: str | NFA, b: str | NFA, budget: int = 4000, max_repeat: int = 40, min_shared: int = 3) -> SearchResult:
    """A line where a match of `a` and a match of `b` share `min_shared` consecutive
    characters (each consumed through a literal or a narrow class), if any.

    Breadth first over (a thread, b thread, shared run, context): the first line
    found is a shortest one.  The joint moves of a pair of threads in a context do
    not depend on the shared run, so they are made once per pair (`prod`) and
    replayed in the same order for every run length (the same search, visited in
    the same order, finds the same witness)."""
    na = a if isinstance(a, NFA) else compile_nfa(a, max_repeat)
    nb = b if isinstance(b, NFA) else compile_nfa(b, max_repeat)
    exact = na.exact and nb.exact
    start = (PRE, ANYR, PRE, ANYR, 0, True, False)
    parent: dict = {start: None}
    queue = deque([start])
    prods: dict = {}
    while queue:
        node = queue.popleft()
        sa, ra, sb, rb, f, at_start, prev_word = node
        acc_a, groups_a = _side(na, sa, ra, at_start, prev_word)
        acc_b, groups_b = _side(nb, sb, rb, at_start, prev_word)
        if f >= min_shared and acc_a and acc_b:
            return SearchResult(True, _witness(parent, node), exact, len(parent))
        if len(parent) > budget:
            return SearchResult(None, None, exact, len(parent))
        pkey = (sa, ra, sb, rb, at_start, prev_word)
        prod = prods.get(pkey)
        if prod is None:
            prod = prods[pkey] = _joint(groups_a, groups_b)
        for nxa, nxb, both, post, part, w in prod:
            nf = f if f >= min_shared else (f + 1 if both else 0)
            if nf < min_shared and post:
                continue  # a match finished before they shared a character: never will
            nxt = (nxa, ANYR, nxb, ANYR, nf, False, w)
            if nxt not in parent:
                parent[nxt] = (node, pick(part))
                queue.append(nxt)
    return SearchResult(False, None, exact, len(parent))


def _side(nfa: NFA, st: int, r: int, at_start: bool, prev_word: bool) -> tuple[bool, tuple]:
    """One side of a pair search: whether the thread's closure in this context can
    end a match, and the move lists of its threads (closure order, empty ones left
    out); memoized on the NFA."""
    key = ("side", st, r, at_start, prev_word)
    got = nfa.memo.get(key)
    if got is None:
        c = _closure(nfa, [(st, r)], at_start, prev_word)
        got = nfa.memo[key] = (_accepting(c), tuple(m for m in (_moves(nfa, *t) for t in c) if m))
    return got


def _joint(groups_a: tuple, groups_b: tuple) -> list[tuple]:
    """Every joint move of two sides, in the order the search tries them (a's
    threads, b's threads, a's moves, b's moves, then the word / non-word parts):
    (a's target, b's target, narrow in both, one side ends, the characters, word?)."""
    out = []
    for ma in groups_a:
        for mb in groups_b:
            for csa, nxa, ina in ma:
                for csb, nxb, inb in mb:
                    cs = inter(csa, csb)
                    if not cs:
                        continue
                    both, post = ina and inb, nxa == POST or nxb == POST
                    for part, w in _split_word(cs):
                        out.append((nxa, nxb, both, post, part, w))
    return out


def _witness(parent: dict, node) -> str:
    chars = []
    while parent[node] is not None:
        node, ch = parent[node]
        chars.append(chr(ch))
    return "".join(reversed(chars))


def contains(a: str | NFA, b: str | NFA, budget: int = 4000, max_repeat: int = 40) -> SearchResult:
    """Is every line `b` matches also matched by `a`?  found=True: yes (b is shadowed);
    found=False with a witness line `b` matches and `a` does not; None: unknown."""
    na = a if isinstance(a, NFA) else compile_nfa(a, max_repeat)
    nb = b if isinstance(b, NFA) else compile_nfa(b, max_repeat)
    exact = na.exact and nb.exact
    start = ((PRE, ANYR), frozenset({(PRE, ANYR)}), True, False)
    parent: dict = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        tb, aset, at_start, prev_word = node
        cb = _closure(nb, [tb], at_start, prev_word)
        ca = _closure(na, aset, at_start, prev_word)
        if any(st == POST and r == ANYR for st, r in ca):
            continue  # a has matched: no counterexample down this path
        if _accepting(cb) and not _accepting(ca):
            return SearchResult(False, _witness(parent, node), exact, len(parent))
        if len(parent) > budget:
            return SearchResult(None, None, exact, len(parent))
        amoves = [m for t in ca for m in _moves(na, *t)]
        for t in cb:
            for csb, nxb, _ in _moves(nb, *t):
                for cell in _cells(csb, [m[0] for m in amoves] + [WORD]):
                    c = pick(cell)
                    nxt_a = frozenset((tgt, ANYR) for cs, tgt, _ in amoves if _has(cs, c))
                    nxt = ((nxb, ANYR), nxt_a, False, _has(WORD, c))
                    if nxt not in parent:
                        parent[nxt] = (node, c)
                        queue.append(nxt)
    return SearchResult(True, None, exact, len(parent))


def _never() -> NFA:
    nfa = NFA()
    nfa.start = nfa.new()
    nfa.accept = nfa.new()  # unreachable
    return nfa


def shortest_line(b: str | NFA, budget: int = 4000, max_repeat: int = 40) -> str | None:
    """A shortest line `b` matches (None: none within the budget)."""
    res = contains(_never(), b, budget, max_repeat)
    return res.witness if res.found is False else None


def _has(cs: CharSet, c: int) -> bool:
    return any(lo <= c <= hi for lo, hi in cs)


def _cells(base: CharSet, sets: list[CharSet]) -> list[CharSet]:
    """Split `base` into cells on which every set in `sets` is uniformly in or out."""
    cells = [base]
    for s in sets:
        nxt = []
        for cell in cells:
            i = inter(cell, s)
            o = minus(cell, s)
            if i:
                nxt.append(i)
            if o:
                nxt.append(o)
        cells = nxt
    return cells
