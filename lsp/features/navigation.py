"""Go to definition, find references and rename for symptoms and rules, across
the TOML, DSL and Python files of a corpus (from the workspace's static name
index).  Pure: returns spans and edits; no LSP types, no I/O.
"""
from __future__ import annotations

import os

import re

from rulekit.diagnostics import Span
from rulekit_lsp.features import Edit
from rulekit_lsp.occurrences import ALIAS, DEF, RULE
from rulekit_lsp.workspace import Corpus

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-:]*$")


def _target(corpus: Corpus, path: str, line: int, col: int):
    hit = corpus.occurrence_at(path, line, col)
    if hit is None:
        return None
    kind, occ = hit
    return kind, occ, corpus.index().get((kind, occ.name), [])


def definition(corpus: Corpus, path: str, line: int, col: int) -> list[Span]:
    t = _target(corpus, path, line, col)
    if t is None:
        return []
    kind, occ, occs = t
    defs = [o.span for _, o in occs if o.role == DEF] or [o.span for _, o in occs if o.role == ALIAS]
    if not defs:  # an alias used as a reference: go to the canonical symptom
        a = corpus.analyze()
        canon = a.registry.canonical(occ.name)
        defs = [o.span for _, o in corpus.index().get((kind, canon), []) if o.role == DEF]
    if not defs and kind == RULE:  # model span (e.g. a rule defined by a non-literal name)
        r = corpus.analyze().rules.get(occ.name)
        if r is not None and r.span is not None:
            defs = [r.span]
    return defs


def references(corpus: Corpus, path: str, line: int, col: int, include_declaration: bool = True) -> list[Span]:
    t = _target(corpus, path, line, col)
    if t is None:
        return []
    _, _, occs = t
    return [o.span for _, o in occs if include_declaration or o.role not in (DEF, ALIAS)]


def prepare_rename(corpus: Corpus, path: str, line: int, col: int) -> tuple[Span, str] | None:
    t = _target(corpus, path, line, col)
    if t is None:
        return None
    _, occ, _ = t
    return occ.span, occ.name[len(occ.edit_prefix):] if occ.edit_prefix else occ.name


def rename(corpus: Corpus, path: str, line: int, col: int, new_name: str) -> dict[str, list[Edit]] | str:
    """Edits per file, or an error message saying why the rename cannot be done."""
    t = _target(corpus, path, line, col)
    if t is None:
        return "no symptom or rule name here"
    kind, occ, occs = t
    if occ.edit_prefix and "." not in new_name:
        new_name = occ.edit_prefix + new_name  # renaming a family member by its short name
    if not NAME_RE.match(new_name):
        return f"`{new_name}` is not a valid {kind} name"
    if (kind, new_name) in corpus.index() and new_name != occ.name:
        return f"a {kind} named `{new_name}` already exists"
    fixed = sorted({p for p, _ in occs if p in corpus.context})
    if fixed:  # the bundled rules under this folder are read, never edited from here
        return (f"`{occ.name}` is also named in the bundled rules ({os.path.basename(fixed[0])}): "
                f"they are not edited from here")
    edits: dict[str, list[Edit]] = {}
    for p, o in occs:
        if o.edit_prefix:
            if not new_name.startswith(o.edit_prefix):
                return f"`{o.name}` is a family member: the new name must keep the prefix `{o.edit_prefix}`"
            text = new_name[len(o.edit_prefix):]
        else:
            text = new_name
        edits.setdefault(p, []).append(Edit(o.span, text))
    return edits
