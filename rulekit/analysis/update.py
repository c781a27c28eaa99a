"""`rulekit test --update`: accept the current results as the new expectations.

* example jobs: `expected.json` keeps its keys, each set to the actual value;
* `*.test.toml` cases: the case's `[case.expect]` keys are set to the actual values
  with tomlkit, so comments and layout survive;
* inline TOML test lines: the test's `expect` / `symptom` (and checked captures)
  lines are rewritten in place to what the rule now produces;
* inline DSL test clauses (`test "LINE" [with {...}] [=> EXPECT]`): the EXPECT part
  is rewritten in place, the rest of the line is kept.

* DSL job cases (`case "NAME" { ... expect { ... } }`): the `expect { ... }` table
  is rewritten on its own line(s), comments elsewhere kept.

TOML inline-table tests are not rewritten: they are listed as skipped so the
author updates them by hand.  The only module of the toolkit that
writes files, and only when the user asked for it.
"""
from __future__ import annotations

import json
import re
from dataclasses import field
from pathlib import Path
from typing import Any, Iterable

from rulekit.rules.records import dataclass
from rulekit.analysis.testing import TestResult


@dataclass
class UpdateReport:
    updated: dict[str, int] = field(default_factory=dict)  # file -> cases rewritten
    skipped: list[str] = field(default_factory=list)  # "file:line: why"


def _accepted(expect: dict[str, Any], actual: dict[str, Any]) -> dict[str, Any]:
    """The expectation with each key it names set to the actual value."""
    out = dict(expect)
    present = set(actual.get("symptoms") or [])
    for k in list(out):
        if k in ("outcome", "sub_domain", "root_node", "ambiguous"):
            out[k] = actual.get(k)
        elif k == "root_cause":
            out[k] = actual.get("root_cause")
        elif k in ("bad_nodes", "affected_nodes"):
            out[k] = sorted(actual.get(k) or [])
        elif k == "confidence":
            out[k] = actual.get(k)
        elif k == "symptoms":
            out[k] = [s for s in out[k] if s in present]
        elif k == "absent_symptoms":
            out[k] = [s for s in out[k] if s not in present]
    return {k: v for k, v in out.items() if v is not None}


def _update_example(r: TestResult, rep: UpdateReport) -> None:
    assert r.span is not None
    path = Path(r.span.file)
    doc = json.loads(path.read_text("utf-8"))
    path.write_text(json.dumps(_accepted(doc, r.actual), indent=2) + "\n", "utf-8")
    rep.updated[str(path)] = rep.updated.get(str(path), 0) + 1


def _update_job_case(r: TestResult, rep: UpdateReport) -> None:
    import tomlkit

    assert r.span is not None
    path = Path(r.span.file)
    if path.suffix == ".rule":
        _update_dsl_case(r, rep, path)
        return
    if path.suffix != ".toml":
        rep.skipped.append(f"{path}:{r.span.line}: job case `{r.name}` is not in a TOML or DSL file; update it by hand")
        return
    doc = tomlkit.parse(path.read_text("utf-8"))
    cases = [c for c in doc.get("case", []) if c.get("name") == r.name]
    if len(cases) != 1:
        rep.skipped.append(f"{path}:{r.span.line}: cannot find one case named `{r.name}`")
        return
    case = cases[0]
    new = _accepted(dict(case.get("expect", {})), r.actual)
    if "expect" not in case:
        case["expect"] = tomlkit.table()
    exp = case["expect"]
    for k in list(exp.keys()):
        if k not in new:
            del exp[k]
    for k, v in new.items():
        if exp.get(k) != v:
            exp[k] = v
    path.write_text(tomlkit.dumps(doc), "utf-8")
    rep.updated[str(path)] = rep.updated.get(str(path), 0) + 1


def _dsl_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(_dsl_value(x) for x in v) + "]"
    return _q(str(v))


def _update_dsl_case(r: TestResult, rep: UpdateReport, path: Path) -> None:
    """Rewrite the `expect { ... }` of the DSL case whose name is at r.span."""
    assert r.span is not None
    text = path.read_text("utf-8")
    lines = text.split("\n")
    start = sum(len(x) + 1 for x in lines[: r.span.line - 1]) + r.span.col - 1
    m = re.compile(r"\bexpect\s*\{").search(text, start)
    nxt = re.compile(r"^case\s", re.M).search(text, start + 1)
    if m is None or (nxt is not None and m.start() > nxt.start()):
        rep.skipped.append(f"{path}:{r.span.line}: cannot find the `expect {{...}}` of case `{r.name}`")
        return
    depth, i = 0, m.end() - 1
    in_str = False
    while i < len(text):
        ch = text[i]
        if in_str:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                break
        i += 1
    new = _accepted(dict(r.expected), r.actual)
    body = ", ".join(f"{k} = {_dsl_value(v)}" for k, v in new.items())
    path.write_text(text[: m.start()] + "expect { " + body + " }" + text[i + 1:], "utf-8")
    rep.updated[str(path)] = rep.updated.get(str(path), 0) + 1


_HEADER = re.compile(r"^\s*\[")
_KEY = re.compile(r"^(\s*)(expect|symptom|captures)\s*=")


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _update_line_test(r: TestResult, lines: list[str], rep: UpdateReport, path: Path) -> bool:
    assert r.span is not None
    i = r.span.line - 1
    if not (0 <= i < len(lines)) or not lines[i].lstrip().startswith("line"):
        rep.skipped.append(f"{path}:{r.span.line}: test `{r.name}` is not a `[[...test]]` table; update it by hand")
        return False
    start = i
    while start > 0 and not _HEADER.match(lines[start]):
        start -= 1
    end = i + 1
    while end < len(lines) and not _HEADER.match(lines[end]) and lines[end].strip():
        end += 1
    indent = re.match(r"^\s*", lines[i]).group(0)  # type: ignore[union-attr]
    events = r.actual.get("events") or []
    want: dict[str, str | None] = {}
    if not events:
        want = {"expect": _q("nothing"), "symptom": None, "captures": None}
    else:
        e = events[0]
        want["expect"] = _q(e["type"])
        want["symptom"] = _q(e["symptom"]) if e.get("symptom") else None
        caps = r.expected.get("captures")
        if caps:
            got = {k: str(e.get("captures", {}).get(k)) for k in caps}
            want["captures"] = "{ " + ", ".join(f"{k} = {_q(v)}" for k, v in got.items()) + " }"
        else:
            want["captures"] = "keep"
    block = lines[start:end]
    seen = set()
    new_block = []
    for ln in block:
        m = _KEY.match(ln)
        if m:
            key = m.group(2)
            seen.add(key)
            val = want.get(key)
            if val == "keep":
                new_block.append(ln)
            elif val is not None:
                new_block.append(f"{m.group(1)}{key} = {val}")
            continue  # None: drop the key
        new_block.append(ln)
    line_pos = next(j for j, ln in enumerate(new_block) if ln.lstrip().startswith("line"))
    for key in ("captures", "symptom", "expect"):
        if key not in seen and want.get(key) not in (None, "keep"):
            new_block.insert(line_pos + 1, f"{indent}{key} = {want[key]}")
    lines[start:end] = new_block
    return True


_DSTR = r'"(?:[^"\\]|\\.)*"'
_DSL_TEST = re.compile(r'test\s+' + _DSTR + r'(?:\s+with\s*\{[^}]*\})?'
                       r'(?P<expect>\s*=>\s*(?:nothing|\w+(?:\s+' + _DSTR + r')?(?:\s+node\s+' + _DSTR + r')?'
                       r'(?:\s+captures\s*\{[^}]*\})?))?')


def _dsl_expect(r: TestResult) -> str:
    events = r.actual.get("events") or []
    if not events:
        return " => nothing"
    e = events[0]
    out = f" => {e['type']}" + (f" {_q(e['symptom'])}" if e.get("symptom") else "")
    if r.expected.get("node") and e.get("node"):
        out += f" node {_q(e['node'])}"
    caps = r.expected.get("captures")
    if caps:
        got = {k: str(e.get("captures", {}).get(k)) for k in caps}
        out += " captures { " + ", ".join(f"{k} = {_q(v)}" for k, v in got.items()) + " }"
    return out


def _update_dsl_test(r: TestResult, lines: list[str], rep: UpdateReport, path: Path) -> bool:
    assert r.span is not None
    i = r.span.line - 1
    text = lines[i] if 0 <= i < len(lines) else ""
    start = text.rfind("test", 0, max(r.span.col - 1, 0))
    m = _DSL_TEST.match(text, start) if start >= 0 else None
    if m is None:
        rep.skipped.append(f"{path}:{r.span.line}: cannot find the `test` clause of `{r.name}`; update it by hand")
        return False
    head_end = m.start("expect") if m.group("expect") is not None else m.end()
    lines[i] = text[:head_end] + _dsl_expect(r) + text[m.end():]
    return True


def update_expectations(results: Iterable[TestResult]) -> UpdateReport:
    """Rewrite the expectations of every failed case (errors are left alone)."""
    rep = UpdateReport()
    by_file: dict[str, list[TestResult]] = {}
    for r in results:
        if r.passed or r.error or r.span is None:
            continue
        if r.kind == "example":
            _update_example(r, rep)
        elif r.kind == "job":
            _update_job_case(r, rep)
        else:
            by_file.setdefault(r.span.file, []).append(r)
    for file, rs in by_file.items():
        path = Path(file)
        if path.suffix not in (".toml", ".rule"):
            for r in rs:
                rep.skipped.append(f"{file}:{r.span.line}: inline test `{r.name}` is in a {path.suffix} file; update it by hand")  # type: ignore[union-attr]
            continue
        text = path.read_text("utf-8")
        lines = text.split("\n")
        n = 0
        update = _update_line_test if path.suffix == ".toml" else _update_dsl_test
        # bottom-up (and right to left on one line), so earlier positions stay valid
        for r in sorted(rs, key=lambda r: (-r.span.line, -r.span.col)):  # type: ignore[union-attr]
            n += update(r, lines, rep, path)
        if n:
            path.write_text("\n".join(lines), "utf-8")
            rep.updated[file] = rep.updated.get(file, 0) + n
    return rep
