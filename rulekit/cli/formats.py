"""Machine formats of toolkit results: JSON, SARIF 2.1.0, GitHub workflow
annotations and JUnit XML.  Each function turns data (Diagnostics, TestResults)
into a string; none prints, exits or reads files.  Paths are shown relative to
`base` (the current folder by default) when they lie under it, so output is the
same on every machine that runs from the repository root.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

from rulekit.codes import CODES
from rulekit.diagnostics import Diagnostic, Span

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/rulekit/rulekit"
FORMATS = ("text", "json", "sarif", "github")


def display_path(file: str, base: str | Path | None = None) -> str:
    """`file` relative to `base` (default cwd) when inside it, with forward slashes."""
    base = Path(base) if base is not None else Path.cwd()
    try:
        rel = os.path.relpath(Path(file).resolve(), base.resolve())
    except ValueError:  # another drive
        return Path(file).as_posix()
    if rel.startswith(".."):
        return Path(file).as_posix()
    return Path(rel).as_posix()


def relativize(diags: Iterable[Diagnostic], base: str | Path | None = None) -> list[Diagnostic]:
    """The same diagnostics with every span's file shown relative to `base`."""
    from dataclasses import replace

    from rulekit.diagnostics import Related

    shown: dict[str, str] = {}  # per file (a corpus's findings name a few files thousands of times)

    def sp(s: Span | None) -> Span | None:
        if s is None:
            return None
        got = shown.get(s.file)
        if got is None:
            got = shown[s.file] = display_path(s.file, base)
        return replace(s, file=got)

    return [replace(d, span=sp(d.span), related=tuple(Related(sp(r.span), r.message) for r in d.related))  # type: ignore[arg-type]
            for d in diags]


def _version() -> str:
    try:
        from importlib.metadata import version

        from rulekit.config import DISTRIBUTION

        return version(DISTRIBUTION)
    except Exception:  # not installed (source tree on sys.path)
        return "0"


# ---- JSON ---------------------------------------------------------------------------------

def diagnostics_json(diags: Sequence[Diagnostic], tool: str = "check", extra: dict[str, Any] | None = None) -> str:
    counts = {"error": 0, "warning": 0, "info": 0, "hint": 0}
    for d in diags:
        counts[d.severity.value] += 1  # type: ignore[union-attr]
    doc: dict[str, Any] = {"tool": f"rulekit {tool}", "diagnostics": [d.to_dict() for d in diags], "summary": counts}
    if extra:
        doc.update(extra)
    return json.dumps(doc, indent=2, sort_keys=False, default=str)


# ---- SARIF 2.1.0 --------------------------------------------------------------------------

_LEVEL = {"error": "error", "warning": "warning", "info": "note", "hint": "note"}


def _region(s: Span) -> dict[str, int]:
    r = {"startLine": max(1, s.line), "startColumn": max(1, s.col)}
    if s.end_line >= s.line:
        r["endLine"] = max(1, s.end_line)
        r["endColumn"] = max(r["startColumn"] if s.end_line == s.line else 1, s.end_col)
    return r


def _location(s: Span, message: str | None = None) -> dict[str, Any]:
    loc: dict[str, Any] = {"physicalLocation": {"artifactLocation": {"uri": Path(s.file).as_posix()},
                                                "region": _region(s)}}
    if message:
        loc["message"] = {"text": message}
    return loc


def sarif(diags: Sequence[Diagnostic], tool: str = "check") -> str:
    """A SARIF 2.1.0 log with one run; every code of the table is a reporting descriptor."""
    codes = sorted(CODES.values(), key=lambda c: c.code)
    index = {c.code: i for i, c in enumerate(codes)}
    rules = [{
        "id": c.code,
        "name": "".join(w.capitalize() for w in c.name.split("-")),
        "shortDescription": {"text": c.summary},
        "fullDescription": {"text": c.doc},
        "help": {"text": c.doc},
        "defaultConfiguration": {"level": _LEVEL[c.severity]},
        "properties": {"tags": [c.name]},
    } for c in codes]
    results = []
    for d in diags:
        r: dict[str, Any] = {"ruleId": d.code, "ruleIndex": index[d.code], "level": _LEVEL[d.severity.value],  # type: ignore[union-attr]
                             "message": {"text": d.message}}
        if d.span is not None:
            r["locations"] = [_location(d.span)]
        if d.related:
            r["relatedLocations"] = [dict(_location(rel.span, rel.message), id=i) for i, rel in enumerate(d.related)]
        if d.data:
            r["properties"] = {k: v for k, v in d.data.items()}
        results.append(r)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "rulekit", "semanticVersion": _version(), "informationUri": INFO_URI,
                                "rules": rules}},
            "automationDetails": {"id": f"rulekit/{tool}/"},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(log, indent=2, default=str)


# ---- GitHub workflow commands -------------------------------------------------------------

_GH_LEVEL = {"error": "error", "warning": "warning", "info": "notice", "hint": "notice"}


def _gh_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(s: str) -> str:
    return _gh_data(s).replace(":", "%3A").replace(",", "%2C")


def github(diags: Sequence[Diagnostic]) -> str:
    """One `::error file=..,line=..,col=..,endLine=..,endColumn=..,title=CODE::message` per finding."""
    out = []
    for d in diags:
        props = []
        s = d.span
        if s is not None:
            props += [f"file={_gh_prop(Path(s.file).as_posix())}", f"line={s.line}", f"col={s.col}"]
            if s.end_line >= s.line:
                props += [f"endLine={s.end_line}", f"endColumn={s.end_col}"]
        props.append(f"title={_gh_prop(f'{d.code} {d.name}')}")
        msg = d.message + "".join(f"\n  note: {r.span}: {r.message}" for r in d.related)
        out.append(f"::{_GH_LEVEL[d.severity.value]} {','.join(props)}::{_gh_data(msg)}")  # type: ignore[union-attr]
    return "\n".join(out)


# ---- JUnit XML ----------------------------------------------------------------------------

def junit(results: Sequence[Any], suite: str = "rulekit", details: dict[int, str] | None = None) -> str:
    """JUnit XML of TestResults (one <testcase> each; classname = kind and file)."""
    from xml.sax.saxutils import escape as xml_escape, quoteattr  # here: ~10 ms of import no other format needs

    details = details or {}
    fails = sum(1 for r in results if r.status == "failed")
    errs = sum(1 for r in results if r.status == "error")
    skips = sum(1 for r in results if r.status == "skipped")
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites name={quoteattr(suite)} tests="{len(results)}" failures="{fails}" errors="{errs}">',
             f'  <testsuite name={quoteattr(suite)} tests="{len(results)}" failures="{fails}" errors="{errs}" '
             f'skipped="{skips}">']
    for i, r in enumerate(results):
        s = r.span
        file = Path(s.file).as_posix() if s else ""
        attrs = f'classname={quoteattr(f"{r.kind}.{file}")} name={quoteattr(r.name)}'
        if s:
            attrs += f' file={quoteattr(file)} line="{s.line}"'
        if r.status == "passed":
            lines.append(f"    <testcase {attrs}/>")
            continue
        if r.status == "skipped":
            lines.append(f"    <testcase {attrs}>")
            lines.append(f"      <skipped message={quoteattr(r.skipped)}/>")
            lines.append("    </testcase>")
            continue
        tag = "error" if r.status == "error" else "failure"
        msg = r.error or "; ".join(r.mismatches)
        body = details.get(i, msg)
        lines.append(f"    <testcase {attrs}>")
        lines.append(f"      <{tag} message={quoteattr(msg)}>{xml_escape(body)}</{tag}>")
        lines.append("    </testcase>")
    lines += ["  </testsuite>", "</testsuites>"]
    return "\n".join(lines)
