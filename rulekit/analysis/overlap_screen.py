"""Cheap, sound screens before the exact overlap search (`overlap.overlap`).

Where two matches share characters, one of them starts inside the other (or
both start at the same place), and from there both consume the same characters
until one of them ends; `overlap` wants at least `min_shared` of those
consecutive characters consumed through a literal or a narrow class by both.
So two patterns can overlap only if, started from the start of one and any
state the other can be in, the two automata can run side by side on common
characters until one can end, with such a run on the way.  Both screens decide
that on the same NFAs as the search, with anchors and word boundaries ignored
(every path they allow is kept, so the screens only ever say "maybe" where the
search could say "yes"):

* `heads_meet(a, b)`: the deterministic first steps of each pattern (its head:
  `mlx5_core `, a PCI address, `: health: `) against the other's states; most
  pairs that share a vendor prefix or a common word part here, in microseconds;
* `may_overlap(a, b)`: the side-by-side run itself, breadth first, with the
  shared-run counter; "maybe" when its state budget runs out.

`tests/test_lint_index.py` checks them against the exact search on every pair of
the bundled corpus and of generated corpora.  Pure functions; no I/O.
"""
from __future__ import annotations

from rulekit.analysis.overlap import NARROW, NFA, _width, inter

HEAD_MAX = 64  # head steps kept per pattern


class Shape:
    """What the screens need of one NFA: per state its character moves (after an
    epsilon closure that ignores anchors and word boundaries), whether a match can
    end there, the states entered after a first character, and the head: the
    character sets of the steps every match takes first (one move each, no end)."""

    __slots__ = ("start", "moves", "acc", "inner", "head", "by_char", "classy", "tri", "ctri", "head3", "sink")

    def __init__(self, nfa: NFA):
        n = len(nfa.trans)
        clos: list[tuple[int, ...]] = []
        for s in range(n):
            seen, stack = {s}, [s]
            while stack:
                x = stack.pop()
                for _cond, t in nfa.eps[x]:
                    if t not in seen:
                        seen.add(t)
                        stack.append(t)
            clos.append(tuple(seen))
        self.start = nfa.start
        self.moves: list[tuple[tuple, ...]] = [
            tuple((cs, t, _width(cs) <= NARROW) for x in clos[s] for cs, t in nfa.trans[x]) for s in range(n)]
        self.acc = [nfa.accept in clos[s] for s in range(n)]
        # states a match can be in after its first character (reachable from the start)
        reach, stack = {nfa.start}, [nfa.start]
        inner: set[int] = set()
        while stack:
            s = stack.pop()
            for _cs, t, _n in self.moves[s]:
                inner.add(t)
                if t not in reach:
                    reach.add(t)
                    stack.append(t)
        self.inner = frozenset(inner)
        head = []
        s = nfa.start
        while len(head) < HEAD_MAX and not self.acc[s] and len(self.moves[s]) == 1:
            cs, t, _n = self.moves[s][0]
            head.append(cs)
            s = t
        self.head = tuple(head)
        # wide sinks: states from which every move is wide and stays among such states
        # (a trailing `.+`, `\S+$`): no narrow character is ever consumed again there
        sink = [bool(self.moves[s]) and all(not nw for _cs, _t, nw in self.moves[s]) for s in range(n)]
        changed = True
        while changed:
            changed = False
            for s in range(n):
                if sink[s] and not all(sink[t] for _cs, t, _nw in self.moves[s]):
                    sink[s] = False
                    changed = True
        self.sink = sink
        # the inner states' moves on one character (single code points) and on classes
        by_char: dict[int, list[int]] = {}
        classy: list[tuple[tuple, int, bool]] = []
        for s in self.inner:
            for cs, t, narrow in self.moves[s]:
                if len(cs) == 1 and cs[0][0] == cs[0][1]:
                    by_char.setdefault(cs[0][0], []).append(t)
                else:
                    classy.append((cs, t, narrow))
        self.by_char = by_char
        self.classy = classy
        # for the quick screen: the character sets of every 3 moves from an inner state,
        # single characters apart (`tri`) from those with a class move (`ctri`)
        tri: set[tuple[int, int, int]] = set()
        ctri: set[tuple[tuple, tuple, tuple]] = set()
        for s in self.inner:
            for cs, t, _n in self.moves[s]:
                for cs2, t2, _n2 in self.moves[t]:
                    for cs3, _t3, _n3 in self.moves[t2]:
                        if _single(cs) and _single(cs2) and _single(cs3):
                            tri.add((cs[0][0], cs2[0][0], cs3[0][0]))
                        else:
                            ctri.add((cs, cs2, cs3))
        self.tri = frozenset(tri)
        self.ctri = tuple(ctri)
        h3 = self.head[:3]
        self.head3 = (tuple(h[0][0] for h in h3) if len(h3) == 3 and all(len(h) == 1 and h[0][0] == h[0][1] for h in h3)
                      else None)


def _single(cs: tuple) -> bool:
    return len(cs) == 1 and cs[0][0] == cs[0][1]


def _has(cs: tuple, c: int) -> bool:
    for lo, hi in cs:
        if lo <= c <= hi:
            return True
        if lo > c:
            return False
    return False


def _enter(host: Shape, first: tuple) -> set[tuple[int, bool]]:
    """(state, narrow move) pairs `host` reaches from an inner state on a character
    of `first`."""
    out: set[tuple[int, bool]] = set()
    if len(first) == 1 and first[0][0] == first[0][1]:
        c = first[0][0]
        out.update((t, True) for t in host.by_char.get(c, ()))
        for cs, t, narrow in host.classy:
            if _has(cs, c):
                out.add((t, narrow))
        return out
    for c, ts in host.by_char.items():
        if _has(first, c):
            out.update((t, True) for t in ts)
    for cs, t, narrow in host.classy:
        if inter(cs, first):
            out.add((t, narrow))
    return out


def _inside(host: Shape, guest: Shape, min_shared: int = 3) -> bool:
    """Can `guest` start inside a match of `host` (at one of host's inner states) and
    both run through guest's head, or host end there after `min_shared` consecutive
    characters both consumed narrowly?  False only when neither can happen."""
    head = guest.head
    if not head:
        return True
    g0 = _width(head[0]) <= NARROW
    states = {(t, 1 if g0 and narrow else 0) for t, narrow in _enter(host, head[0]) if not host.sink[t]}
    for i in range(1, len(head)):
        if not states:
            return False
        if any(f >= min_shared and host.acc[t] for t, f in states):
            return True
        cs = head[i]
        gn = _width(cs) <= NARROW
        nxt: set[tuple[int, int]] = set()
        for t, f in states:
            for mcs, t2, narrow in host.moves[t]:
                if inter(mcs, cs):
                    nxt.add((t2, f if f >= min_shared else (f + 1 if gn and narrow else 0)))
        states = {(t, f) for t, f in nxt if f >= min_shared or not host.sink[t]}
    return bool(states)


def _first_steps(host: Shape, guest: Shape) -> set[tuple[int, int, int]]:
    """(host state, guest state, shared run) after the guest's first character, the
    guest starting at an inner state of the host."""
    out: set[tuple[int, int, int]] = set()
    for csg, tg, ng in guest.moves[guest.start]:
        if len(csg) == 1 and csg[0][0] == csg[0][1]:
            c = csg[0][0]
            for th in host.by_char.get(c, ()):
                out.add((th, tg, 1 if ng else 0))
            for cs, th, nh in host.classy:
                if _has(cs, c):
                    out.add((th, tg, 1 if ng and nh else 0))
            continue
        for c, ths in host.by_char.items():
            if _has(csg, c):
                for th in ths:
                    out.add((th, tg, 1 if ng else 0))
        for cs, th, nh in host.classy:
            if inter(cs, csg):
                out.add((th, tg, 1 if ng and nh else 0))
    return out


def _same_start(a: Shape, b: Shape) -> bool:
    """Can both start at the same character?  Their heads (one move a step, no end)
    must agree step by step as far as both go; False only when they cannot."""
    ha, hb = a.head, b.head
    k = min(len(ha), len(hb))
    if ha[:k] == hb[:k]:
        return True
    lo, hi = 0, k  # ha[:lo] == hb[:lo], ha[:hi] != hb[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ha[:mid] == hb[:mid]:
            lo = mid
        else:
            hi = mid
    for i in range(lo, k):
        if ha[i] != hb[i] and not inter(ha[i], hb[i]):
            return False
    return True


def _may_host(host: Shape, guest: Shape) -> bool:
    """Can `host`, from an inner state, take the first 3 characters of `guest`'s head
    (three moves of `tri` or `ctri`)?  False only when it cannot."""
    g = guest.head3
    if g is None or g in host.tri:
        return True
    c1, c2, c3 = g
    return any(_has(p1, c1) and _has(p2, c2) and _has(p3, c3) for p1, p2, p3 in host.ctri)


def quick_disjoint(a: Shape, b: Shape) -> bool:
    """True when the two can never overlap, decided from precomputed heads, trigrams
    and classes alone (a few microseconds); False: maybe (run `may_overlap`)."""
    return not (_same_start(a, b) or _may_host(a, b) or _may_host(b, a))


def _run(a: Shape, b: Shape, seeds, min_shared: int, budget: int, joint: dict | None = None) -> bool:
    """Breadth first from the seeds (a state, b state, shared run): can both consume
    common characters until one can end, with `min_shared` consecutive characters
    narrow in both on the way?  True also when the budget runs out.  `joint`: the
    joint moves of state pairs already made (for these two shapes), kept by the
    caller across runs (they do not depend on the shared run)."""
    if joint is None:
        joint = {}
    seen = set(seeds)
    frontier = list(seen)
    while frontier:
        nxt = []
        for sa, sb, f in frontier:
            if f >= min_shared and (a.acc[sa] or b.acc[sb]):
                return True
            if f < min_shared and (a.sink[sa] or b.sink[sb]):
                continue  # never another narrow character on one side: the run cannot grow
            moves = joint.get((sa, sb))
            if moves is None:
                mb = b.moves[sb]
                moves = joint[(sa, sb)] = [(ta, tb, na and nb) for csa, ta, na in a.moves[sa] if mb
                                           for csb, tb, nb in mb if inter(csa, csb)]
            for ta, tb, both in moves:
                nf = f if f >= min_shared else (f + 1 if both else 0)
                key = (ta, tb, nf)
                if key not in seen:
                    seen.add(key)
                    nxt.append(key)
            if len(seen) > budget:
                return True
        frontier = nxt
    return False


def may_overlap(a: Shape, b: Shape, min_shared: int = 3, budget: int = 20000) -> bool:
    """Can a match of `a` and a match of `b` share `min_shared` consecutive characters
    consumed narrowly by both?  Both start at the same character, or `b` starts
    inside `a`, or `a` inside `b`; each case runs the two side by side from there
    (the inner cases only when the heads screen lets them through).  False only
    when none can happen; True also when a budget runs out."""
    joint: dict = {}
    if _run(a, b, [(a.start, b.start, 0)], min_shared, budget, joint):
        return True
    if _inside(a, b, min_shared) and _run(a, b, _first_steps(a, b), min_shared, budget, joint):
        return True
    if _inside(b, a, min_shared) and _run(a, b, [(sa, sb, f) for sb, sa, f in _first_steps(b, a)], min_shared, budget,
                                          joint):
        return True
    return False
