"""Byte-level superset forms of rule regexes, for the acceleration gate.

Rules are matched (and confirmed) by RE2 on the decoded line (UTF-8, invalid bytes
replaced by U+FFFD), i.e. in UTF-8 mode.
The gate instead runs over raw byte chunks: pyre2 compiled from a *bytes* pattern
(RE2 Latin-1 mode, one byte = one character) or Hyperscan in byte mode.  This
module rewrites a rule's parse tree into a pattern over bytes whose language is a
*superset* of the rule's on any line, valid UTF-8 or not, so the gate can never
miss a line the rule matches:

- `.`, negated classes and every class escape (`\\w`/`\\d`/`\\s` too: pyre2 makes
  them Unicode-aware on str patterns, like Python's `re`) also accept a whole
  multi-byte UTF-8 character; a class or literal with non-ASCII members accepts
  any multi-byte character;
- under `(?i)` ASCII letters are spelled out (`[kK]`), plus the non-ASCII
  spellings RE2 folds `k` and `s` with;
- named groups become non-capturing; `\\A`/`\\Z` become `^`/`$` (the gate runs in
  multi-line mode);
- leading and trailing parts that can match the empty string (`.*`, `(?P<msg>.*)`)
  are dropped, and a rule cut at its `.*`-like gaps keeps only its most literal
  piece: a part of a concatenation matches wherever the whole does, and fewer gaps
  mean a smaller DFA, a faster Hyperscan compile and fewer callbacks;
- a form longer than `LONG_FORM` characters from a rule that is an alternation keeps,
  of each alternative that holds one of its chosen key's literals as a run of at
  least `KEY_RUN` literal characters next to an alternation of its own, only that
  run (the context around it is the confirmation's business): a catalog row spelled
  several ways, each behind a context alternation, gates on its few distinctive
  literals (136 such rows compiled in minutes in Hyperscan, in seconds this way);
- a form that would open with a class or repeat starts at its first run of three
  literal characters instead;
- every counted repeat becomes `*` or `+` (a superset with far fewer states);
- the end is trimmed to the first place a match could end (`_trim_tail`).

Everything is emitted with `\\xHH` escapes, so the result is plain ASCII text valid
for both RE2 and Hyperscan.  Pure functions; no compilation, no scanning.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rulekit.extract import literals as L

# One non-ASCII character of the decoded line: a multi-byte UTF-8 character, or one
# U+FFFD that replaced an invalid byte or a truncated sequence (1-3 bytes >= 0x80).
MB = r"[\x80-\xff]{1,4}"
CP = r"(?:[\x00-\x7f]|" + MB + ")"  # one character


class Unsupported(Exception):
    """The tree holds a construct the gate cannot represent."""


@dataclass(frozen=True)
class Superset:
    text: str | None  # bytes-mode pattern text (ASCII); None: matches every line
    exact_parse: bool  # False: Python could not parse the pattern (RE2-only syntax)
    reason: str = ""  # why the superset is trivial or approximate


_NAMED_GROUP = re.compile(r"(?<!\\)\(\?P?<(?![=!])\w+>")


@lru_cache(maxsize=8192)
def superset_of(pattern: str, key: frozenset | None = None) -> Superset:
    """The byte-level superset of `pattern` (see the module docstring).  `key`: the
    rule's chosen prefilter factor (`literals.choose_keys`); the piece of the rule
    that requires it is the one kept."""
    tree = L.parse(pattern)
    if tree is None:
        return Superset(None, False, "Python's parser cannot read this pattern (RE2-only syntax)")
    flags = tree.state.flags
    try:
        icase = bool(flags & re.IGNORECASE)
        items = _strip_nullable(_best_segment(_strip_nullable(list(tree)), key, icase))
        text = _form(items, flags)
        if text is not None and len(text) > LONG_FORM:
            text = _form(_key_alternatives(items, key, icase), flags)
        if text is None:
            return Superset(None, True, "the pattern matches the empty string, i.e. every line")
    except Unsupported as e:
        return Superset(None, True, str(e))
    return Superset(text, True)


def _form(items, flags) -> str | None:
    """The emitted gate form of a rule's kept items (None: it matches every line)."""
    items = _strip_nullable(_literal_start(items))
    if not items:
        return None
    items = _trim_tail(items) or items
    return _Emitter(bool(flags & re.IGNORECASE), bool(flags & re.DOTALL)).seq(items)


def raw_gate_form(pattern: str) -> str:
    """Gate form of a pattern Python cannot parse: the pattern itself with named
    groups made non-capturing.  In RE2 Latin-1 mode it agrees with the rule on
    ASCII lines only, so callers must also gate every non-ASCII line for it."""
    return _NAMED_GROUP.sub("(?:", pattern)


def _is_gap(op, av) -> bool:
    """`.*`, `[^,]*`, `\\S*`: an optional run of a broad character class."""
    if op not in (L.MAX_REPEAT, L.MIN_REPEAT) or av[0] != 0 or av[1] is not L.sre_parse.MAXREPEAT:
        return False
    body = list(av[2])
    if len(body) != 1:
        return False
    bop, bav = body[0]
    if bop is L.ANY:
        return True
    if bop is L.IN:
        return any(o is L.NEGATE or (o is L.CATEGORY and "NOT" in str(a)) for o, a in bav)
    return bop is L.NOT_LITERAL


def _literal_weight(items) -> int:
    """Literal characters every match of `items` must contain (a rough lower bound)."""
    w = 0
    for op, av in items:
        if op is L.LITERAL:
            w += 1
        elif op is L.SUBPATTERN:
            w += _literal_weight(av[3])
        elif op is L.BRANCH:
            w += min(_literal_weight(alt) for alt in av[1])
        elif op in (L.MAX_REPEAT, L.MIN_REPEAT) and av[0] >= 1:
            w += _literal_weight(av[2])
    return w


def _best_segment(items, key=None, icase=False):
    """The gate needs only one piece of a rule cut at its `.*`-like gaps (any
    contiguous part of a concatenation matches wherever the whole does): keep the
    piece that requires the rule's chosen key, else the one with the most literal
    characters (ties: the last).  Fewer gaps mean a
    smaller DFA and a faster Hyperscan compile."""
    segs, cur = [], []
    for it in items:
        if _is_gap(*it):
            segs.append(cur)
            cur = []
        else:
            cur.append(it)
    segs.append(cur)
    if len(segs) == 1:
        return items
    if key:
        for k in range(len(segs) - 1, -1, -1):
            lang, factors = L._Walker().seq(segs[k], icase)
            if lang is not None:
                L._Walker._close(set(lang), factors)
            if key in factors:
                return list(segs[k])
    best = max(range(len(segs)), key=lambda k: (_literal_weight(segs[k]), k))
    return list(segs[best])


KEY_RUN = 10  # literal characters a distinctive run has (shorter ones, `Warning`, would gate too many lines)
LONG_FORM = 600  # characters of a gate form above which its alternatives are cut to their key runs


def _key_alternatives(items, key=None, icase=False):
    """A rule that is one alternation (possibly in a plain group): each alternative that
    holds an alternation of its own and a run of at least KEY_RUN literal characters
    spelling one of the key's literals becomes that run; the others stay.  Each
    alternative is replaced by a part of itself, so the whole is still a superset."""
    if not key:
        return items
    body = items
    if len(body) == 1 and body[0][0] is L.SUBPATTERN and not body[0][1][1] and not body[0][1][2]:
        body = list(body[0][1][3])
    if len(body) != 1 or body[0][0] is not L.BRANCH:
        return items
    alts = body[0][1][1]
    new = [_key_run(list(alt), key, icase) or alt for alt in alts]
    if all(a is b for a, b in zip(new, alts)):
        return items
    return [(L.BRANCH, (body[0][1][0], new))]


def _key_run(alt, key, icase):
    """The run of literal characters of `alt` (plain groups looked into) that spells a
    literal of `key`, or None."""
    flat = []
    for op, av in alt:
        if op is L.SUBPATTERN and not av[1] and not av[2]:
            flat.extend(av[3])
        else:
            flat.append((op, av))
    if not any(op is L.BRANCH for op, _av in flat):
        return None  # no context alternation: the form is cheap as it is
    run: list = []
    for item in [*flat, (None, None)]:
        if item[0] is L.LITERAL:
            run.append(item)
            continue
        if len(run) >= KEY_RUN:
            text = "".join(chr(av) for _op, av in run)
            if (text.lower() if icase else text).lower().encode("utf-8") in key:
                return run
        run = []
    return None


def _literal_start(items):
    """Start the gate form at its first run of 3 literal characters when it would
    otherwise open with a class or repeat (`[\\w.-]+:\\d+ ... NCCL INFO`): any suffix
    of a concatenation matches wherever the whole does, and a leading class keeps a
    DFA thread alive on every word of every line."""
    if not items or items[0][0] is L.LITERAL or (items[0][0] is L.AT and len(items) > 1 and items[1][0] is L.LITERAL):
        return items
    for k in range(1, len(items) - 2):
        if all(items[k + j][0] is L.LITERAL for j in range(3)):
            return items[k:]
    return items


def _nullable(op, av) -> bool:
    if op is L.AT:
        return True
    if op in (L.MAX_REPEAT, L.MIN_REPEAT):
        return av[0] == 0 or all(_nullable(o, a) for o, a in av[2])
    if op is L.SUBPATTERN:
        return all(_nullable(o, a) for o, a in av[3])
    if op is L.BRANCH:
        return any(all(_nullable(o, a) for o, a in alt) for alt in av[1])
    return False


def _strip_nullable(items):
    """Drop leading and trailing parts that can match the empty string; an anchor or
    word boundary right next to the kept core is put back (cheap, and it keeps the
    gate narrow).  Empty result: the pattern matches every line."""
    if all(_nullable(*it) for it in items):
        return []
    popped = None
    while items and _nullable(*items[-1]):
        popped = items.pop()
    if popped is not None and popped[0] is L.AT:
        items.append(popped)
    popped = None
    while items and _nullable(*items[0]):
        popped = items.pop(0)
    if popped is not None and popped[0] is L.AT:
        items.insert(0, popped)
    return items


def _trim_tail(items) -> list:
    r"""`items` with what can follow its first possible end cut off: a repeat at the end
    becomes one copy of its body, a group or each alternative at the end is trimmed
    the same way, and a part that can then match the empty string goes.  Wherever the
    whole matches, the trimmed form matches from the same start to an end at or
    before the whole's (a superset on the same line); Hyperscan reports every end
    of every match, and a `[^\n]*`, `\S+` or `\d+` at the end made one per byte.  An
    anchor at the end stops the trimming (it keeps the form narrow)."""
    items = list(items)
    while items:
        op, av = items[-1]
        if op in (L.MAX_REPEAT, L.MIN_REPEAT):
            if av[0] == 0:
                items.pop()
                continue
            items[-1:] = _trim_tail(av[2])
            return items
        if op is L.SUBPATTERN:
            group, add, dele, p = av
            inner = _trim_tail(p)
            if not inner:
                items.pop()
                continue
            if add or dele:  # (the group's flags apply to what it holds)
                items[-1] = (op, (group, add, dele, inner))
            else:
                items[-1:] = inner
            return items
        if op is L.BRANCH:
            alts = [_trim_tail(alt) for alt in av[1]]
            if not all(alts):  # an alternative that can match nothing: so can the branch
                items.pop()
                continue
            items[-1] = (op, (av[0], alts))
            return items
        return items
    return items


def _single_byte(cls: str) -> str:
    """Rewrite a class form from `klass` so that each alternative takes one byte:
    `(?:[..]|MB)` -> `[..\\x80-\\xff]`, `(?:[^..]|MB)` -> `[^..]`, `(?:\\S|MB)` -> `\\S`."""
    alts = _split_alts(cls)
    has_mb = MB in alts or CP in alts
    out = []
    for a in alts:
        if a == CP:
            out.append(r"[\x00-\xff]")
        elif a == MB:
            if len(alts) == 1:
                out.append(r"[\x80-\xff]")
        elif a.startswith("[") and not a.startswith("[^") and has_mb:
            out.append(a[:-1] + r"\x80-\xff]")
        else:
            out.append(a)  # [^..], \S, \W, \D take bytes >= 0x80 already
    if has_mb and not any(a.startswith("[") and not a.startswith("[^") for a in out) \
            and not any(a.startswith("[^") or a in (r"\S", r"\W", r"\D") for a in out) and len(alts) > 1:
        out.append(r"[\x80-\xff]")
    return out[0] if len(out) == 1 else "(?:" + "|".join(out) + ")"


def _split_alts(cls: str) -> list[str]:
    if cls == CP:
        return [CP]
    if cls.startswith("(?:") and cls.endswith(")"):
        body = cls[3:-1]
        parts, depth, cur, i = [], 0, "", 0
        while i < len(body):
            c = body[i]
            if c == "\\":
                cur += body[i:i + 2]
                i += 2
                continue
            if c in "[(":
                depth += 1
            elif c in "])":
                depth -= 1
            if c == "|" and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += c
            i += 1
        parts.append(cur)
        return parts
    return [cls]


def _esc(code: int) -> str:
    ch = chr(code)
    if ch.isascii() and ch.isalnum():
        return ch
    return "\\x%02x" % code


def _utf8(code: int) -> str:
    return "".join("\\x%02x" % b for b in chr(code).encode("utf-8"))


def _is_letter(code: int) -> bool:
    return code < 128 and chr(code).isalpha()


class _Emitter:
    def __init__(self, icase: bool, dotall: bool):
        self.icase = icase
        self.dotall = dotall

    def seq(self, items) -> str:
        return "".join(self.item(op, av) for op, av in items)

    def item(self, op, av) -> str:
        if op is L.LITERAL:
            return self.literal(av)
        if op is L.NOT_LITERAL:
            if av < 128:
                body = _esc(av)
                if self.icase and _is_letter(av):
                    body = _esc(ord(chr(av).lower())) + _esc(ord(chr(av).upper()))
                return "(?:[^" + body + "]|" + MB + ")"
            return CP
        if op is L.ANY:
            return CP if self.dotall else r"(?:[^\n]|" + MB + ")"
        if op is L.IN:
            return self.klass(av)
        if op is L.BRANCH:
            return "(?:" + "|".join(self.seq(alt) for alt in av[1]) + ")"
        if op is L.SUBPATTERN:
            _group, add, dele, p = av
            saved = (self.icase, self.dotall)
            if add & re.IGNORECASE:
                self.icase = True
            if dele & re.IGNORECASE:
                self.icase = False
            if add & re.DOTALL:
                self.dotall = True
            if dele & re.DOTALL:
                self.dotall = False
            try:
                return "(?:" + self.seq(p) + ")"
            finally:
                self.icase, self.dotall = saved
        if op in (L.MAX_REPEAT, L.MIN_REPEAT):
            # Any repeat becomes unbounded (`*` or `+`): a superset, and far fewer
            # DFA states / Hyperscan compile time than counted repeats.  A repeated
            # single character becomes a single-byte class that also takes every
            # byte >= 0x80, which covers multi-byte characters when repeated.
            lo, _hi, p = av
            p = list(p)
            if len(p) == 1 and p[0][0] in (L.ANY, L.NOT_LITERAL, L.IN, L.LITERAL):
                inner = self.byte_class(*p[0])
            else:
                inner = "(?:" + self.seq(p) + ")"
            return inner + ("*" if lo == 0 else "+")
        if op is L.AT:
            name = str(av)
            if name in ("AT_BEGINNING", "AT_BEGINNING_STRING", "AT_BEGINNING_LINE"):
                return "^"
            if name in ("AT_END", "AT_END_STRING", "AT_END_LINE"):
                return "$"
            if name == "AT_BOUNDARY":
                return r"\b"
            if name == "AT_NON_BOUNDARY":
                return r"\B"
            raise Unsupported(f"anchor {name}")
        raise Unsupported(f"construct {op} is not supported by RE2")

    def byte_class(self, op, av) -> str:
        """One single-byte matcher that, repeated, covers `op`'s character repeated."""
        if op is L.ANY:
            return r"[\x00-\xff]" if self.dotall else r"[^\n]"
        if op is L.NOT_LITERAL:
            if av < 128:
                if self.icase and _is_letter(av):
                    return "[^" + _esc(ord(chr(av).lower())) + _esc(ord(chr(av).upper())) + "]"
                return "[^" + _esc(av) + "]"
            return r"[\x00-\xff]"
        if op is L.LITERAL:
            if av < 128 and not (self.icase and chr(av).lower() in L._FOLD_EXTRA):
                return self.literal(av)
            if av < 128:
                return "[" + chr(av).lower() + chr(av).upper() + r"\x80-\xff]"
            partners = L.ascii_fold_partners(chr(av)) if self.icase else ""
            return "[" + partners + r"\x80-\xff]"
        full = self.klass(av)  # IN
        return _single_byte(full)

    def literal(self, code: int) -> str:
        if code < 128:
            if self.icase and _is_letter(code):
                low = chr(code).lower()
                alts = "[" + low + low.upper() + "]"
                extra = L._FOLD_EXTRA.get(low, ())
                if extra:
                    return "(?:" + alts + "|" + "|".join(_utf8(ord(x)) for x in extra) + ")"
                return alts
            return _esc(code)
        ch = chr(code)
        if self.icase and ch.lower() != ch.upper():
            partners = L.ascii_fold_partners(ch)
            return "(?:" + MB + "|[" + partners + "])" if partners else MB
        if code == 0xFFFD:
            return MB
        return "(?:" + _utf8(code) + ")"

    def klass(self, items) -> str:
        body: list[str] = []
        negate = False
        multibyte = False
        outside: list[str] = []  # negated categories: pyre2 rejects them inside [...]
        for op, av in items:
            if op is L.NEGATE:
                negate = True
            elif op is L.LITERAL:
                if av < 128:
                    body.append(_esc(av))
                    if self.icase and _is_letter(av):
                        body.append(_esc(ord(chr(av).swapcase())))
                        if chr(av).lower() in L._FOLD_EXTRA:
                            multibyte = True
                else:
                    multibyte = True
                    if self.icase:
                        body.extend(L.ascii_fold_partners(chr(av)))
            elif op is L.RANGE:
                lo, hi = av
                if lo < 128:
                    top = min(hi, 127)
                    body.append(_esc(lo) + "-" + _esc(top))
                    if self.icase:
                        for a, z in ((ord("a"), ord("z")), (ord("A"), ord("Z"))):
                            s, e = max(lo, a), min(top, z)
                            if s <= e:
                                body.append(_esc(ord(chr(s).swapcase())) + "-" + _esc(ord(chr(e).swapcase())))
                                multibyte = True  # k/s fold orbits
                if hi >= 128:
                    multibyte = True
                    if self.icase:
                        for c in range(max(lo, 128), min(hi, 0x2200) + 1):
                            body.extend(x for x in L.ascii_fold_partners(chr(c)) if x not in body)
            elif op is L.CATEGORY:
                name = str(av)
                # pyre2 makes \d \w \s Unicode-aware on str patterns (like Python's re),
                # so every category, positive or negated, may take a non-ASCII character
                table = {
                    "CATEGORY_DIGIT": (r"\d", False), "CATEGORY_NOT_DIGIT": (r"\D", True),
                    "CATEGORY_SPACE": (r"\s", False), "CATEGORY_NOT_SPACE": (r"\S", True),
                    "CATEGORY_WORD": (r"\w", False), "CATEGORY_NOT_WORD": (r"\W", True),
                }
                if name not in table:
                    raise Unsupported(f"class category {name}")
                text, negated = table[name]
                (outside if negated else body).append(text)
                mb = True
                multibyte = multibyte or mb
            else:
                raise Unsupported(f"class item {op}")
        if negate:
            if outside or not body:
                return CP  # e.g. [^\S]: any character is a superset
            return "(?:[^" + "".join(body) + "]|" + MB + ")"
        alts = (["[" + "".join(body) + "]"] if body else []) + outside
        if multibyte:
            alts.append(MB)
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
