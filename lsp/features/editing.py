"""Formatting (DSL and TOML, comments kept, through the DSL package's formatters)
and code actions: register a missing symptom, set a missing blame, add an
overlap's witness line as a test, replace an RE2-incompatible construct where a
safe rewrite exists.
Pure: returns edits; no LSP types, no I/O.
"""
from __future__ import annotations

import json
import re

from rulekit.diagnostics import Diagnostic, Span
from rulekit_lsp.features import Action, Edit
from rulekit_lsp.workspace import Corpus, file_kind


def whole(path: str, text: str) -> Span:
    lines = text.split("\n")
    return Span(path, 1, 1, len(lines), len(lines[-1]) + 1)


def format_document(path: str, text: str) -> list[Edit]:
    """One whole-document edit when the formatter changes the text, else none."""
    from rulekit.rules import dsl

    kind = file_kind(path)
    try:
        if kind == "rule":
            new = dsl.format_dsl(text, path)
        elif kind in ("toml", "tests"):
            new = dsl.format_toml(text)
        else:
            return []
    except Exception:  # noqa: BLE001 - a formatter bug must not break the editor: leave the text alone
        return []
    if new == text:
        return []
    return [Edit(whole(path, text), new)]


# ---- code actions ------------------------------------------------------------------------

def code_actions(corpus: Corpus, path: str, span: Span,
                 only: set[tuple[str, str]] | None = None) -> list[Action]:
    """Actions for the diagnostics overlapping `span` (restricted to the (code, message)
    pairs in `only` when the editor says which diagnostics it asks about)."""
    st = corpus.files.get(path)
    if st is None:
        return []
    out: list[Action] = []
    diags = corpus.diagnostics_by_file().get(path, [])
    for d in diags:
        s = d.span
        if s is None or (s.end_line, s.end_col) < (span.line, span.col) or (s.line, s.col) > (span.end_line, span.end_col):
            continue
        if only and (d.code, d.message) not in only:
            continue
        if d.code == "RK203":
            a = register_symptom_action(corpus, path, st.text, d)
            if a:
                out.append(a)
        elif d.code == "RK208":
            out.extend(blame_actions(path, st.text, d))
        elif d.code in ("RK306", "RK307"):
            out.extend(witness_actions(corpus, d))
        elif d.code in ("RK302", "RK301", "RK309"):
            a = re2_rewrite_action(path, st.text, d)
            if a:
                out.append(a)
    return out


def register_symptom_action(corpus: Corpus, path: str, text: str, d: Diagnostic) -> Action | None:
    name = d.data.get("symptom")
    if not name or "{" in name or not re.match(r"^[\w.\-:]+$", name):
        return None
    kind = file_kind(path)
    lines = text.split("\n")
    end = Span(path, len(lines), len(lines[-1]) + 1, len(lines), len(lines[-1]) + 1)
    lead = "" if text.endswith("\n") or not text else "\n"
    if kind == "toml":
        new = (f'{lead}\n[[symptom]]\nname = "{name}"\noutcome = "unknown"\nsub_domain = "unknown"\nrank = 100\n'
               f'blame = "none"\ndocs = ""\n')
    elif kind == "rule":
        new = f'{lead}\nsymptom "{name}" {{\n  outcome unknown\n  sub_domain unknown\n  rank 100\n  blame none\n}}\n'
    elif kind == "py":
        new = f'{lead}\nregister_symptom("{name}", outcome="unknown", sub_domain="unknown", rank=100, blame="none")\n'
    else:
        return None
    return Action(f"Register symptom `{name}`", "quickfix", {path: [Edit(end, new)]}, d)


_RANK = {"toml": re.compile(r"^(\s*)rank\s*=\s*-?\d+[^\n]*$", re.M),
         "rule": re.compile(r"\brank\s+-?\d+"),
         "py": re.compile(r"\brank\s*=\s*-?\d+\s*,?")}


def blame_actions(path: str, text: str, d: Diagnostic) -> list[Action]:
    """RK208: one quick fix per blame class, inserted after the symptom's `rank`."""
    from rulekit.rules.model import BLAMES

    kind = file_kind(path)
    rx = _RANK.get(kind or "")
    if rx is None or d.span is None:
        return []
    lines = text.split("\n")
    start = sum(len(x) + 1 for x in lines[: d.span.line - 1]) + d.span.col - 1
    stop = text.find("[[", start) if kind == "toml" else -1
    m = rx.search(text, start, stop if stop >= 0 else len(text))
    if m is None:
        return []
    line = text.count("\n", 0, m.end()) + 1
    col = m.end() - (text.rfind("\n", 0, m.end()) + 1) + 1
    at = Span(path, line, col, line, col)
    out = []
    for b in BLAMES:
        if kind == "toml":
            new = f'\n{m.group(1)}blame = "{b}"'
        elif kind == "rule":
            new = f" blame {b}"
        else:
            new = f' blame="{b}",' if m.group(0).rstrip().endswith(",") else f', blame="{b}"'
        out.append(Action(f"Set blame `{b}`", "quickfix", {path: [Edit(at, new)]}, d))
    return out


def _witness(d: Diagnostic) -> str | None:
    for k in ("witness", "witness_line", "line"):
        v = d.data.get(k)
        if isinstance(v, str) and v:
            return v
    m = re.search(r"witness(?: line)?:?\s*(`|')(.+)\1", d.message)
    return m.group(2) if m else None


def witness_actions(corpus: Corpus, d: Diagnostic) -> list[Action]:
    line = _witness(d)
    if line is None:
        return []
    names = [v for k, v in d.data.items() if k in ("rule", "other", "rule_a", "rule_b", "rules") and v]
    flat: list[str] = []
    for v in names:
        flat.extend(v if isinstance(v, (list, tuple)) else [v])
    a = corpus.analyze()
    out = []
    # lint's suggested fix pins the winner (the higher-ranked symptom): offer it first
    m = re.search(r'symptom = "([^"]+)"', str(d.data.get("fix", "")))
    winner_symptom = m.group(1) if m else None

    def is_winner(name: str) -> bool:
        r = a.rules.get(name)
        return bool(r is not None and getattr(r, "emit", None) is not None and r.emit.symptom == winner_symptom)

    for name in sorted(dict.fromkeys(flat), key=lambda n: not is_winner(n)):
        rule = a.rules.get(name)
        if rule is None or getattr(rule, "emit", None) is None or rule.span is None:
            continue
        st = corpus.files.get(rule.span.file)
        if st is None:
            continue
        edit = _test_insertion(st.kind, rule.span.file, st.text, rule, line)
        if edit:
            why = "pins the winner" if is_winner(name) else f"expects its {rule.emit.type}"
            out.append(Action(f"Add the witness line as a test of `{name}` ({why})",
                              "quickfix", {rule.span.file: [edit]}, d))
    return out


def _test_insertion(kind: str, path: str, text: str, rule, witness: str) -> Edit | None:
    lines = text.split("\n")
    sym = rule.emit.symptom
    if kind == "toml":
        if rule.origin:  # family/catalog expansions keep their tests elsewhere
            return None
        # end of the rule's table: the line before the next top-level table header
        i = rule.span.line
        while i < len(lines) and not re.match(r"^\s*\[\[?\s*(symptom|extractor|family|catalog|outcome_rule)\s*\]\]?\s*$",
                                              lines[i]):
            i += 1
        while i > rule.span.line and not lines[i - 1].strip():
            i -= 1
        body = f"[[extractor.test]]\nline = {json.dumps(witness)}\n"
        if sym and "{" not in sym:
            body += f'symptom = "{sym}"\n'
        return Edit(Span(path, i + 1, 1, i + 1, 1), body) if i < len(lines) else \
            Edit(Span(path, len(lines), len(lines[-1]) + 1, len(lines), len(lines[-1]) + 1), "\n" + body)
    if kind == "rule":
        # before the closing brace of the declaration
        for i in range(rule.span.line - 1, len(lines)):
            if lines[i].strip() == "}":
                exp = rule.emit.type + (f' "{sym}"' if sym and "{" not in sym else "")
                return Edit(Span(path, i + 1, 1, i + 1, 1), f"  test {json.dumps(witness)} => {exp}\n")
    return None


_REWRITES = [
    (re.compile(r"^\(\?>$"), lambda t: "(?:"),  # atomic group opener
    (re.compile(r"^(.*[*+?}])\+$", re.S), lambda t: t[:-1]),  # possessive quantifier
    (re.compile(r"^\\[uU]([0-9a-fA-F]{4,8})$"), lambda t: _char(int(t[2:], 16))),  # the character itself
    (re.compile(r"^\\Z$"), lambda t: "\\z"),
    (re.compile(r"^\{,(\d+)\}$"), lambda t: "{0," + t[2:]),
    (re.compile(r"^\(\?#[^)]*\)$"), lambda t: ""),
]


def _char(code: int) -> str | None:
    try:
        ch = chr(code)
    except (ValueError, OverflowError):
        return None
    if not ch.isprintable() or ch.isspace() or ch in "\\.^$|?*+()[]{}\"'":
        return None  # no safe literal spelling
    return ch


def re2_rewrite_action(path: str, text: str, d: Diagnostic) -> Action | None:
    s = d.span
    if s is None or s.line != s.end_line:
        return None
    lines = text.split("\n")
    if not (0 < s.line <= len(lines)):
        return None
    seg = lines[s.line - 1][s.col - 1 : s.end_col - 1]
    m = re.search(r"`([^`]+)`", d.message)
    if m and m.group(1).startswith(seg) and len(m.group(1)) > len(seg):
        seg = m.group(1)  # the message names the whole construct
        if lines[s.line - 1][s.col - 1 : s.col - 1 + len(seg)] != seg:
            return None
    for rx, fn in _REWRITES:
        if rx.match(seg):
            new = fn(seg)
            if new is None:
                return None
            return Action(f"Rewrite `{seg}` as `{new}` (RE2-compatible)" if new else f"Remove `{seg}`",
                          "quickfix", {path: [Edit(Span(path, s.line, s.col, s.line, s.col + len(seg)), new)]}, d)
    return None
