"""Draft extractors from mined templates (`rulekit mine --draft`), each checked before it is written.

A draft is a TOML `[[symptom]]` and `[[extractor]]` pair (or, `render_dsl`, a
`symptom` and an `extractor` block of the rule DSL, grammar/, with the same tests): the pattern is the template's
message with its literal words escaped and each masked variable a named RE2 group
(named after the word before it when that word says what it is: rank, gpu, device,
code, port, pid; else its kind and position); a free token of Drain becomes the
alternation of the few plain words seen there, else `\\S+`; the pattern ends at the
line's end and starts at a word boundary.  The
symptom's outcome, sub_domain, blame and action come from the component vocabulary
row the lines name (`rulekit.extract.errorline`) and are marked for the author to
confirm; its rank sits above the fallback band.  Inline tests are real lines: one
positive per masked variant of the template (up to five) and one near miss, the
closest line of another template the pattern does not match (or, when there is none,
the first line with its most telling word changed, said so in a comment).

`validate` loads the corpus with the drafts added and keeps a draft only when it
loads without error, its inline tests pass and the overlap lint (RK306/RK307) finds
no existing rule that also matches its lines; a rejected draft says why, an overlap
with the other rule and the witness line.  Pure but for a temporary folder.
"""
from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from rulekit.analysis.mine import VAR_RE2, Template, message_of
from rulekit.extract.errorline import vocabulary

DRAFT_RANK = 100  # above the fallback band (0), below every specific symptom of the bundled corpus
_NAMED_BY = {"rank": "rank", "gpu": "gpu", "device": "device", "dev": "device", "cuda": "device", "code": "code",
             "error": "code", "err": "code", "rc": "code", "status": "code", "errno": "code", "port": "port",
             "pid": "pid", "xid": "xid", "comm": "comm", "node": "node", "host": "node"}
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")
_META = re.compile(r"([.^$|?*+()\[\]{}\\])")
_TOKEN = re.compile(r"<(PCI|IP|HEX|NUM|NODE)>|<\*>")
_STOP = {"the", "a", "an", "of", "to", "in", "on", "for", "and", "or", "is", "was", "with", "by", "at", "from"}


def _escape(text: str) -> str:
    """A literal for RE2 (only its metacharacters escaped, so the pattern stays readable)."""
    return _META.sub(r"\\\1", text)


def pattern_of(template: str, variants: Sequence[str] = ()) -> tuple[str, list[str]]:
    """(RE2 pattern, its group names) for a Drain template over masked messages.

    `variants`: the masked messages seen (Drain clusters messages of one token count):
    a free token whose seen values are a few plain words becomes their alternation."""
    toks = template.split()
    seen = [v.split() for v in variants if len(v.split()) == len(toks)]
    for i, tok in enumerate(toks):
        vals = {v[i] for v in seen}
        if tok == "<*>" and vals and len(vals) <= 5 and all(re.fullmatch(r"[\w.:/-]+", x) for x in vals):
            toks[i] = "<ALT>" + "|".join(sorted(vals))
    while toks and toks[0] == "<*>":
        toks.pop(0)
    while toks and toks[-1] == "<*>":
        toks.pop()
    parts, names, counts = [], [], {}
    prev_word = ""
    for tok in toks:
        if tok.startswith("<ALT>"):
            parts.append("(?:" + "|".join(_escape(x) for x in tok[5:].split("|")) + ")")
            continue
        piece, pos = [], 0
        for m in _TOKEN.finditer(tok):
            lit = tok[pos:m.start()]
            if lit:
                piece.append(_escape(lit))
                words = _WORD.findall(lit)
                prev_word = words[-1].lower() if words else prev_word
            kind = m.group(1)
            if kind is None:
                piece.append(r"\S+")
            else:
                base = _NAMED_BY.get(prev_word.rstrip("s"), kind.lower()) if kind != "NODE" else "node"
                counts[base] = counts.get(base, 0) + 1
                name = base if counts[base] == 1 else f"{base}{counts[base]}"
                names.append(name)
                piece.append(f"(?P<{name}>{VAR_RE2[kind]})")
            pos = m.end()
        lit = tok[pos:]
        if lit:
            piece.append(_escape(lit))
            words = _WORD.findall(lit)
            prev_word = words[-1].lower() if words else prev_word
        parts.append("".join(piece))
    # anchored at the line's end (the message is the line's tail) and, when it starts with a
    # word, at a word boundary: another rule's match can neither run on into it nor follow it
    body = r"\s+".join(parts)
    lead = r"\b" if toks and re.match(r"\w", toks[0]) else ""
    return lead + body + r"\s*$", names


def _words(template: str) -> list[str]:
    out = []
    for w in _WORD.findall(_TOKEN.sub(" ", template)):
        lw = w.lower()
        if lw not in _STOP and lw not in (x.lower() for x in out) and not lw.startswith("0x"):
            out.append(w)
    return out


@dataclass
class Draft:
    template: Template
    rule: str
    symptom: str
    pattern: str
    groups: list[str]
    component: str
    sources: list[str]
    positives: list[tuple[str, str | None]]  # (line, source)
    near_miss: tuple[str, str | None, bool]  # (line, source, constructed)
    text: str = ""
    dsl: bool = False  # `text` is in the rule DSL (grammar/), not TOML
    problems: list[str] = field(default_factory=list)
    overlaps: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "symptom": self.symptom, "pattern": self.pattern, "groups": self.groups,
                "component": self.component, "template": self.template.template, "jobs": len(self.template.jobs),
                "problems": self.problems, "overlaps": self.overlaps}


def _toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _literal(s: str) -> str:
    return f"'{s}'" if "'" not in s and "\n" not in s else _toml_str(s)


def _near_miss(t: Template, pattern: str, others: Sequence[Template]) -> tuple[str, str | None, bool]:
    rx = re.compile(pattern)
    mine = set(_words(t.template))
    t_sources = {u.source or "applog" for u in t.variants.values()}
    best, score = None, 0.0
    for o in others:
        for e in o.examples:
            if rx.search(e.text):
                continue
            ws = set(_words(message_of(e.text)))
            s = len(mine & ws) / (len(mine | ws) or 1)
            s += 0.5 if s and (e.source or "applog") in t_sources else 0
            if s > score:
                best, score = e, s
    if best is not None and score > 0:
        return best.text, best.source, False
    first = next(iter(t.variants.values()))
    words = sorted(_words(t.template), key=len, reverse=True)
    line = first.text
    for w in words:
        changed = re.sub(r"\b" + re.escape(w) + r"\b", "nominal" if w.lower() != "nominal" else "normal", line, count=1)
        if changed != line and not rx.search(changed):
            return changed, first.source, True
    return "all ranks nominal\n", first.source, True


def make_drafts(templates: Sequence[Template], taken_rules: set[str], taken_symptoms: set[str],
                dsl: bool = False) -> list[Draft]:
    """One draft per template (templates with no literal word are skipped: nothing to match on);
    TOML, or the rule DSL with `dsl`."""
    vocab = {c.name: c for c in vocabulary().components}
    out = []
    for t in templates:
        pattern, groups = pattern_of(t.template, list(t.variants))
        words = _words(t.template)
        if not words or not pattern:
            continue
        comp = vocab.get(t.component or "") or vocabulary().components[-1]
        base = "_".join(w.upper() for w in words[:5])
        symptom = f"{comp.name.upper()}_{base}" if not base.startswith(comp.name.upper()) else base
        symptom = re.sub(r"[^A-Z0-9_]", "_", symptom)[:60].strip("_")
        rule = "Draft" + "".join(w[:1].upper() + w[1:].lower() for w in words[:5])
        rule = re.sub(r"[^A-Za-z0-9]", "", rule)[:60]
        s, r, i = symptom, rule, 2
        while s in taken_symptoms or r in taken_rules:
            s, r, i = f"{symptom}_{i}", f"{rule}{i}", i + 1
        taken_symptoms.add(s)
        taken_rules.add(r)
        positives = [(u.text, u.source) for u in t.variants.values()]
        sources = sorted({src or "applog" for _, src in positives})
        d = Draft(t, r, s, pattern, groups, comp.name, sources, positives, ("", None, False))
        d.near_miss = _near_miss(t, pattern, [o for o in templates if o is not t])
        d.dsl = dsl
        d.text = render_dsl(d, comp) if dsl else render(d, comp)
        out.append(d)
    return out


def _header(t: Template) -> list[str]:
    """The comment over a draft: where its lines come from."""
    ex = t.examples[0]
    return [f"# drafted by `rulekit mine` from {t.lines} unexplained line(s) in {len(t.jobs)} job(s) on "
            f"{len(t.nodes)} node(s)", f"# template: {t.template}",
            f"# e.g. job {ex.job} {ex.file or ''}:{ex.line_num or ''}"]


def render(d: Draft, comp: Any) -> str:
    t = d.template
    lines = [
        *_header(t),
        "[[symptom]]",
        f"name = {_toml_str(d.symptom)}",
        f"outcome = {_toml_str(comp.outcome)}      # CONFIRM: suggested by the `{comp.name}` component",
        f"sub_domain = {_toml_str(comp.sub_domain)}",
        f"rank = {DRAFT_RANK}",
        f"blame = {_toml_str(comp.blame)}      # CONFIRM: the component's default blame (docs/blame.md)",
    ]
    if comp.action:
        lines.append(f"action = {_toml_str(comp.action)}      # CONFIRM: the component's default action")
    lines += [
        f"docs = {_toml_str('DRAFT: ' + t.template)}",
        "",
        "[[extractor]]",
        f"name = {_toml_str(d.rule)}",
        f"match_re = {_literal(d.pattern)}",
        f"source = {_toml_str(d.sources[0]) if len(d.sources) == 1 else '[' + ', '.join(map(_toml_str, d.sources)) + ']'}",
        f"docs = {_toml_str('DRAFT from mined lines: ' + t.template)}",
        f"emit = {{ type = \"bad_node\", symptom = {_toml_str(d.symptom)} }}",
    ]
    for line, src in d.positives:
        lines += ["", "[[extractor.test]]", f"line = {_toml_str(line)}", f"symptom = {_toml_str(d.symptom)}"]
        if src and src != "applog":
            lines.append(f"source = {_toml_str(src)}")
    line, src, constructed = d.near_miss
    lines += ["", "[[extractor.test]]" + ("    # near miss, constructed: a key word changed" if constructed
                                         else "    # near miss: the closest line of another template"),
              f"line = {_toml_str(line)}", 'expect = "nothing"']
    if src and src != "applog" and src in d.sources:
        lines.append(f"source = {_toml_str(src)}")
    elif d.sources != ["applog"]:
        lines.append(f"source = {_toml_str(d.sources[0])}")
    return "\n".join(lines) + "\n"


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_DSL_ESC = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def dsl_str(s: str) -> str:
    r"""A DSL string literal (one line; `\\` `\"` `\n` `\t` `\r`, other control characters `\uXXXX`)."""
    return '"' + "".join(_DSL_ESC.get(c) or (f"\\u{ord(c):04x}" if ord(c) < 32 or ord(c) == 127 else c)
                         for c in s) + '"'


def _dsl_word(s: str) -> str:
    return s if _NAME.fullmatch(s) else dsl_str(s)


def dsl_regex(pattern: str) -> str:
    r"""A `/.../` literal: every unescaped `/` written `\/` (RE2 reads `\/` as `/`)."""
    out, esc = [], False
    for c in pattern:
        if c == "/" and not esc:
            out.append("\\/")
        else:
            out.append(c)
        esc = c == "\\" and not esc
    return "/" + "".join(out) + "/"


def render_dsl(d: Draft, comp: Any) -> str:
    """The draft in the rule DSL: the same symptom, extractor and tests as `render`."""
    t = d.template
    lines = [
        *_header(t),
        f"symptom {dsl_str(d.symptom)} {{",
        f"  outcome {_dsl_word(comp.outcome)}      # CONFIRM: suggested by the `{comp.name}` component",
        f"  sub_domain {_dsl_word(comp.sub_domain)}",
        f"  rank {DRAFT_RANK}",
        f"  blame {_dsl_word(comp.blame)}      # CONFIRM: the component's default blame (docs/blame.md)",
    ]
    if comp.action:
        lines.append(f"  action {_dsl_word(comp.action)}      # CONFIRM: the component's default action")
    lines += [
        f"  docs {dsl_str('DRAFT: ' + t.template)}",
        "}",
        "",
        f"extractor {d.rule} {{",
        f"  docs {dsl_str('DRAFT from mined lines: ' + t.template)}",
        "  source " + ", ".join(_dsl_word(x) for x in d.sources),
        f"  match {dsl_regex(d.pattern)}",
        f"  emit bad_node {dsl_str(d.symptom)}",
    ]
    for line, src in d.positives:
        with_ = f" with {{ source = {dsl_str(src)} }}" if src and src != "applog" else ""
        lines.append(f"  test {dsl_str(line)}{with_} => bad_node {dsl_str(d.symptom)}")
    line, src, constructed = d.near_miss
    near = src if src and src != "applog" and src in d.sources else d.sources[0] if d.sources != ["applog"] else None
    lines.append("  # near miss, constructed: a key word changed" if constructed
                 else "  # near miss: the closest line of another template")
    lines.append(f"  test {dsl_str(line.rstrip(chr(10)))}" + (f" with {{ source = {dsl_str(near)} }}" if near else "")
                 + " => nothing")
    lines.append("}")
    return "\n".join(lines) + "\n"


def validate(drafts: list[Draft], rule_paths: Sequence[str | Path] | None) -> tuple[list[Draft], list[Draft]]:
    """(accepted, rejected): each accepted draft loads, passes its tests and overlaps no rule."""
    from rulekit.analysis.lint import lint_corpus
    from rulekit.analysis.testing import run_line_test
    from rulekit.diagnostics import Severity
    from rulekit.rules.loader import bundled_rules_path, load_corpus

    paths = [Path(p) for p in (rule_paths or [bundled_rules_path()])]
    pending = list(drafts)
    rejected: list[Draft] = []
    with tempfile.TemporaryDirectory(prefix="rulekit-drafts-") as tmp:
        f = Path(tmp) / ("drafts.rule" if any(d.dsl for d in drafts) else "drafts.toml")
        for _ in range(len(drafts) + 1):
            if not pending:
                break
            text, starts = "", []
            for d in pending:
                starts.append(text.count("\n") + 1)
                text += d.text + "\n"
            f.write_text(text, encoding="utf-8")
            res = load_corpus([*paths, Path(tmp)])
            errs = [x for x in res.diagnostics if x.severity is Severity.ERROR]
            bad: set[int] = set()
            for x in errs:
                if x.span is None or Path(x.span.file).resolve() != f.resolve():
                    raise ValueError(f"the corpus does not load without the drafts: {x}")
                i = max(j for j, s in enumerate(starts) if s <= x.span.line)
                pending[i].problems.append(f"check: {x.code} {x.message}")
                bad.add(i)
            if res.engine is None and not bad:
                raise ValueError("the corpus does not load: " + "; ".join(str(x) for x in errs[:3]))
            if bad:
                rejected += [pending[i] for i in sorted(bad)]
                pending = [d for i, d in enumerate(pending) if i not in bad]
                continue
            engine = res.engine
            by_name = {r.name: r for r in engine.extractors}
            failing = set()
            for i, d in enumerate(pending):
                rule = by_name[d.rule]
                for k, t in enumerate(rule.tests):
                    r = run_line_test(engine, rule, t, k)
                    if not r.passed:
                        d.problems.append(f"test: {r.name}: {'; '.join(r.mismatches) or r.error}")
                        failing.add(i)
            names = {d.rule: i for i, d in enumerate(pending)}
            for x in lint_corpus(res, cost=False):
                data = x.data or {}
                if x.code not in ("RK306", "RK307"):
                    continue
                a, b = data.get("rule"), data.get("other")
                mine_ = a if a in names else b if b in names else None
                if mine_ is None:
                    continue
                other = b if mine_ == a else a
                d = pending[names[mine_]]
                d.overlaps.append({"rule": other, "witness": data.get("witness"), "code": x.code})
                d.problems.append(f"overlap: {x.code} with `{other}` on {data.get('witness')!r}")
                failing.add(names[mine_])
            rejected += [pending[i] for i in sorted(failing)]
            return [d for i, d in enumerate(pending) if i not in failing], rejected
    return [], rejected
