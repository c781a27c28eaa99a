"""Byte-level superset forms of rule regexes, for the acceleration gate.

Rules are matched (and confirmed) by RE2 on the decoded line, i.e. in UTF-8 mode.
The gate instead runs over raw byte chunks: pyre2 compiled from a *bytes* pattern
(RE2 Latin-1 mode, one byte = one character) or Hyperscan in byte mode.  This
module rewrites a rule's parse tree into a pattern over bytes whose language is a
*superset* of the rule's on any valid UTF-8 line, so the gate can never miss a
line the rule matches:

- `.`, negated classes, `\\W`/`\\S`/`\\D` also accept a whole multi-byte UTF-8
  character; a class or literal with non-ASCII members accepts any multi-byte
  character;
- under `(?i)` ASCII letters are spelled out (`[kK]`), plus the non-ASCII
  spellings RE2 folds `k` and `s` with;
- named groups become non-capturing; `\\A`/`\\Z` become `^`/`$` (the gate runs in
  multi-line mode);
- leading and trailing parts that can match the empty string (`.*`, `(?P<msg>.*)`)
  are dropped: removing a prefix or suffix only widens an unanchored search, and
  fewer trailing `.*` means fewer Hyperscan callbacks.

Everything is emitted with `\\xHH` escapes, so the result is plain ASCII text valid
for both RE2 and Hyperscan.  Pure functions; no compilation, no scanning.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from rulekit import literals as L

MB = r"[\xc0-\xff][\x80-\xbf]{1,3}"  # one multi-byte UTF-8 character
CP = r"(?:[\x00-\x7f]|" + MB + ")"  # one UTF-8 character


class Unsupported(Exception):
    """The tree holds a construct the gate cannot represent."""


@dataclass(frozen=True)
class Superset:
    text: str | None  # bytes-mode pattern text (ASCII); None: matches every line
    exact_parse: bool  # False: Python could not parse the pattern (RE2-only syntax)
    reason: str = ""  # why the superset is trivial or approximate


_NAMED_GROUP = re.compile(r"(?<!\\)\(\?P?<(?![=!])\w+>")


def superset_of(pattern: str) -> Superset:
    """The byte-level superset of `pattern` (see the module docstring)."""
    tree = L.parse(pattern)
    if tree is None:
        return Superset(None, False, "Python's parser cannot read this pattern (RE2-only syntax)")
    flags = tree.state.flags
    try:
        items = _strip_nullable(list(tree))
        if not items:
            return Superset(None, True, "the pattern matches the empty string, i.e. every line")
        text = _Emitter(bool(flags & re.IGNORECASE), bool(flags & re.DOTALL)).seq(items)
    except Unsupported as e:
        return Superset(None, True, str(e))
    return Superset(text, True)


def raw_gate_form(pattern: str) -> str:
    """Gate form of a pattern Python cannot parse: the pattern itself with named
    groups made non-capturing.  In RE2 Latin-1 mode it agrees with the rule on
    ASCII lines only, so callers must also gate every non-ASCII line for it."""
    return _NAMED_GROUP.sub("(?:", pattern)


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
            lo, hi, p = av
            inner = "(?:" + self.seq(p) + ")"
            if hi is L.sre_parse.MAXREPEAT:
                if lo == 0:
                    return inner + "*"
                if lo == 1:
                    return inner + "+"
                return inner + "{%d,}" % lo
            if lo == 0 and hi == 1:
                return inner + "?"
            if lo == hi:
                return inner + "{%d}" % lo
            return inner + "{%d,%d}" % (lo, hi)
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
            return "(?:" + MB + ")"
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
            elif op is L.CATEGORY:
                name = str(av)
                table = {
                    "CATEGORY_DIGIT": (r"\d", False), "CATEGORY_NOT_DIGIT": (r"\D", True),
                    "CATEGORY_SPACE": (r"\s", False), "CATEGORY_NOT_SPACE": (r"\S", True),
                    "CATEGORY_WORD": (r"\w", False), "CATEGORY_NOT_WORD": (r"\W", True),
                }
                if name not in table:
                    raise Unsupported(f"class category {name}")
                text, mb = table[name]
                (outside if mb else body).append(text)
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
