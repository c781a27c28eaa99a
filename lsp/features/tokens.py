"""Semantic tokens for `.rule` DSL files: keywords, strings, regexes, numbers,
comments, declared names (rules as functions, symptoms as enum members), strata
and emit types.  A tolerant lexer (works on broken text) refined by the AST when
the file parses.  Pure: no LSP types.
"""
from __future__ import annotations

import re

from rulekit.rules.model import EMIT_TYPES, FilterPriority, RefinerPriority
from rulekit_lsp.features import Token

KEYWORDS = {"action", "add", "aliases", "all", "any", "anywhere", "at", "author", "blame", "captures", "case", "catalog", "collector",
            "demote", "discard", "docs", "each", "emit", "entry", "expect", "extractor", "family", "filter", "for",
            "format", "from", "gather", "job", "key", "least", "match", "member", "node", "nothing", "observe", "on",
            "outcome", "over", "prefer", "prefix", "promote", "python", "rank", "refiner", "requires", "same",
            "source", "sub_domain", "symptom", "test", "them", "unique", "unless", "uses", "when", "with"}
STRATA = {s.name for s in FilterPriority} | {s.name for s in RefinerPriority}
_LEX = re.compile(r'(?P<comment>#.*)|(?P<string>"(?:[^"\\\n]|\\.)*"?)|(?P<regex>/(?:[^/\\\n]|\\.)+/)'
                  r"|(?P<number>\b\d+(?:\.\d+)?\b)|(?P<word>[A-Za-z_][A-Za-z0-9_.\-]*)|(?P<op>=>|[{}=+,])")


def dsl_tokens(text: str, module=None) -> list[Token]:
    decl_names: dict[tuple[int, int], str] = {}
    if module is not None:
        for item in getattr(module, "items", []):
            name = getattr(item, "name", None)
            if name is not None and name.span.line == name.span.end_line:
                decl_names[(name.span.line, name.span.col)] = "enumMember" if item.kind in ("symptom", "prefix") \
                    else "function" if item.kind != "case" else "string"
    out: list[Token] = []
    prev_word = ""
    for ln, line in enumerate(text.split("\n"), start=1):
        prev_word = ""
        for m in _LEX.finditer(line):
            kind = m.lastgroup
            col, length = m.start() + 1, m.end() - m.start()
            decl = decl_names.get((ln, col))
            if decl:
                out.append(Token(ln, col, length, decl, ("declaration",)))
            elif kind == "comment":
                out.append(Token(ln, col, length, "comment"))
            elif kind == "string":
                out.append(Token(ln, col, length, "string"))
            elif kind == "regex":
                if prev_word in ("match", "") or prev_word == "match":
                    out.append(Token(ln, col, length, "regexp"))
            elif kind == "number":
                out.append(Token(ln, col, length, "number"))
            elif kind == "word":
                w = m.group()
                if w in STRATA:
                    out.append(Token(ln, col, length, "enumMember", ("defaultLibrary",)))
                elif w in EMIT_TYPES:
                    out.append(Token(ln, col, length, "type", ("defaultLibrary",)))
                elif w in KEYWORDS:
                    out.append(Token(ln, col, length, "keyword"))
                elif prev_word in ("requires", "uses", "python", ","):
                    out.append(Token(ln, col, length, "function"))
                else:
                    out.append(Token(ln, col, length, "variable"))
                prev_word = w
                continue
            elif kind == "op":
                out.append(Token(ln, col, length, "operator"))
            prev_word = m.group() if kind == "op" and m.group() == "," else ""
    return out
