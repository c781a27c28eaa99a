"""`rulekit explain CODE` / `rulekit explain --list` / `rulekit explain JOB_DIR [--line FILE:N] [--rule NAME]`.

One command that dispatches on its argument: a diagnostic code (`RK101`) or code
name (`unknown-key`) prints that code's documentation from the code table (What it
does / Why / Example / Fix); `--list` lists every code (`--format markdown` is
docs/codes.md); a job
directory prints the attribution trace from `rulekit.analysis.explain` (phase by
phase, and why the root cause won), or with `--line FILE:N` every rule that
matches that log line, its captures and what became of its events.  Text or
`--format json`.  Exit 0, or 2 on a usage or input error.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from rulekit.analysis.explain import explain_code, explain_job, explain_line, parse_line_ref
from rulekit.cli._common import bundled_option, check_format, check_paths_exist, choose_or_exit, load_engine_or_exit
from rulekit.cli.app import app
from rulekit.cli.status import ExitStatus, fail
from rulekit.diagnostics import RulekitError


def render_code(c: Any) -> str:
    return f"{c.code} {c.name} ({c.severity})\n{c.summary}\n\n{c.doc}"


def code_json(c: Any) -> dict[str, Any]:
    return {"code": c.code, "name": c.name, "severity": c.severity, "summary": c.summary, "doc": c.doc,
            "sections": c.sections(), "what": c.what, "why": c.why, "example": c.example, "fix": c.fix,
            "example_file": c.example_file, "not_from_rule_file": c.not_from_rule_file}


def _list_codes(fmt: str) -> None:
    from rulekit.codes import CODES, markdown

    if fmt == "markdown":
        typer.echo(markdown(), nl=False)
    elif fmt == "json":
        typer.echo(json.dumps([code_json(c) for c in CODES.values()], indent=2))
    else:
        for c in CODES.values():
            typer.echo(f"{c.code}  {c.name:<28} {c.severity:<8} {c.summary}")


@app.command()
def explain(
    target: Optional[str] = typer.Argument(None, help="A diagnostic code (RK101 or its name) or a job directory."),
    line: Optional[str] = typer.Option(None, "--line", "-l", help="FILE:N: trace one log line of the job."),
    rule: Optional[str] = typer.Option(None, "--rule", help="Only this rule's matches and actions."),
    rules: Optional[list[Path]] = typer.Option(None, "--rules", "-r", help="Rule folder(s) on top of the bundled rules "
                                               "(default: the project file's `rules`)."),
    bundled: Optional[bool] = bundled_option(),
    fmt: str = typer.Option("text", "--format", "-f", help="text or json (with --list also markdown: docs/codes.md)"),
    list_codes: bool = typer.Option(False, "--list", help="List every diagnostic code."),
) -> None:
    """Explain a diagnostic code, or why a job was attributed the way it was."""
    if list_codes:
        check_format(fmt, ("text", "json", "markdown"))
        _list_codes(fmt)
        return
    check_format(fmt, ("text", "json"))
    if target is None:
        fail("give a diagnostic code (RK101 or its name), a job directory, or --list")
    code = explain_code(target)
    if code is not None and not Path(target).is_dir():
        if fmt == "json":
            typer.echo(json.dumps(code_json(code), indent=2))
        else:
            typer.echo(render_code(code))
        return
    job_dir = Path(target)
    if not job_dir.is_dir():
        typer.echo(f"error: {target!r} is neither a diagnostic code (RKnnn or a code name) nor a job directory", err=True)
        raise typer.Exit(ExitStatus.USAGE)
    ref = None
    if line is not None:
        ref = parse_line_ref(line)
        if ref is None:
            typer.echo(f"error: --line wants FILE:N (N >= 1), got {line!r}", err=True)
            raise typer.Exit(ExitStatus.USAGE)
    check_paths_exist(rules)
    res = load_engine_or_exit(choose_or_exit(rules, bundled).load_paths)
    if rule is not None and rule not in res.engine.by_name:
        from rulekit.rules.suggest import did_you_mean

        fail(f"no rule named {rule!r} in the corpus{did_you_mean(rule, res.engine.by_name)}")
    try:
        data = (explain_line(res.engine, job_dir, ref.file, ref.line, rule) if ref
                else explain_job(res.engine, job_dir, rule))
    except RulekitError as e:  # each located (`job.toml:2:1: error RK502 ...`), as `attribute` says it
        from rulekit.cli.render import print_diagnostics

        print_diagnostics(e.diagnostics, err=True)
        raise typer.Exit(ExitStatus.USAGE)
    if fmt == "json":
        typer.echo(json.dumps(data, indent=2, default=str))
    else:
        typer.echo(render_line_trace(data) if ref else render_job_trace(data))


def _where(span: dict[str, Any] | None) -> str:
    return f"{span['file']}:{span['line']}" if span else "?"


def render_line_trace(d: dict[str, Any]) -> str:
    out = [f"{d['file']}:{d['line_num']}  (source {d['source']}, format {d['format']}"
           + (f", node {d['node']})" if d.get("node") else ")"),
           f"  {d['line']}"]
    if not d["matches"]:
        out.append("No rule matches this line" + (f" (rule {d['rule']} does not)." if d.get("rule") else "."))
    else:
        out.append(f"Rules matching this line ({len(d['matches'])}):")
        for m in d["matches"]:
            note = "" if m["applies"] else f"  [does not run on {d['source']}/{d['format']}: sources {m['sources'] or 'any'}]"
            out.append(f"  {m['rule']}  ({m['kind']}, {_where(m['span'])}){note}")
            out.append(f"    matched cols {m['match']['start']}-{m['match']['end'] - 1}: {m['match']['text']!r}")
            if m["captures"]:
                out.append("    captures: " + ", ".join(f"{k}={v!r}" for k, v in sorted(m["captures"].items())))
            e = m.get("emit")
            if e:
                rank = f" (rank {e['rank']})" if e.get("rank") is not None else ""
                out.append(f"    emits: {e['type']} {e['symptom'] or ''}{rank}".rstrip()
                           + (f" on {e['node']}" if e.get("node") else ""))
    if d["events"]:
        out.append("Events from this line in the job:")
        for e in d["events"]:
            out.append(f"  #{e['id']} {e['type']} {e['symptom'] or ''} on {e['node'] or '?'}  (rule {e['rule']})")
        for t in d["history"]:
            out.append(f"    {t['phase']}: {t['rule']} {t['action']} #{t['event_id']}"
                       + (f" — {t['reason']}" if t["reason"] else ""))
        if d["root_cause_from_line"]:
            out.append("  This line is the root cause's evidence.")
    return "\n".join(out)


def _ranks(rs: list[int]) -> str:
    from rulekit.inputs.fr_analysis import ranges

    return ranges(rs) or "none"


def render_flight_recorder(fr: dict[str, Any] | None) -> list[str]:
    """The flight-recorder collector: culprits with their verdict, stuck collectives, mismatches."""
    if not fr:
        return []
    out = [f"Flight recorder ({len(fr.get('dump_ranks', []))} dump(s)"
           + (f", no dump from rank(s) {_ranks(fr['missing_dumps'])}" if fr.get("missing_dumps") else "") + "):"]
    for c in fr.get("culprits", []):
        ev = ", ".join(e["symptom"] for e in c.get("evidence", [])) or ", ".join(c.get("node_hardware", []))
        out.append(f"  culprit rank {c['rank']} on {c['node'] or '?'}: {c['verdict']}" + (f" ({ev})" if ev else ""))
        out.append(f"    {c['why']}")
    if not fr.get("culprits"):
        out.append(f"  no culprit rank: {fr.get('reason', '')}")
    for s in fr.get("stuck", []):
        if s.get("culprits"):
            states = ", ".join(f"{k.replace('_', ' ')} {_ranks(s[k])}" for k in
                               ("no_dump", "not_reached", "scheduled", "started", "completed") if s.get(k))
            out.append(f"  pg {s['group']} ({s['desc']}) {s['kind']} {s['seq']} {s['op']} sizes {s['input_sizes']}: {states}")
    for m in fr.get("mismatches", []):
        out.append(f"  mismatch: pg {m['group']} ({m['desc']}) collective {m['seq']} {m['what']}: rank(s) "
                   f"{_ranks(m['ranks'])} differ from {m['expected'].get('op')} {m['expected'].get('input_sizes')}")
    for r, why in sorted(fr.get("blocked", {}).items(), key=lambda x: int(x[0])):
        out.append(f"  rank {r} is not a culprit: it {why}")
    return out


def render_job_trace(d: dict[str, Any]) -> str:
    out = [f"Job {d['job_id']}: {str(d['outcome']).upper()} / {d['sub_domain']}"
           + ("  (ambiguous)" if d.get("ambiguous") else "")]
    rc = d.get("root_cause")
    out.append(f"Root cause: {rc['symptom']} on {rc['node']} (rule {rc['rule']})" if rc else "Root cause: none")
    out.append("Why:")
    out += [f"  - {w}" for w in d["why"]]
    if d["candidates"]:
        out.append("Bad-node symptoms (by rank):")
        for c in d["candidates"]:
            state = "remains" if c["remaining"] else "removed"
            added = f", added by {c['added_by']}" if c.get("added_by") else ""
            out.append(f"  {c['rank'] if c['rank'] is not None else '?':>5}  {c['symptom']:<40} {state:<8} "
                       f"{c['events']} event(s) on {', '.join(c['nodes'])}{added}")
            for r in c["removed_by"]:
                out.append(f"         {r['action']} by {r['rule']} ({r['phase']}): {r['reason']}")
            for r in c.get("notes", []):
                out.append(f"         {r['action']} by {r['rule']} ({r['phase']}): {r['reason']}")
    out.append(f"Extraction: {len(d['events'])} event(s)" + (f" (rule {d['rule']} only)" if d.get("rule") else ""))
    for p in d["phases"]:
        order = ", ".join(f"{r['rule']} @ {r['stratum']}" for r in p.get("rules", []) if r.get("stratum"))
        out.append(f"Phase {p['phase']}:" + (f"  (in priority order: {order})" if order else ""))
        for t in p["entries"]:
            ev = f"#{t['event_id']} " if t["event_id"] is not None else ""
            out.append(f"  {t['rule']}: {t['action']} {ev}{t['symptom'] or ''}"
                       + (f" on {t['node']}" if t["node"] else "") + (f" — {t['reason']}" if t["reason"] else ""))
    if not d["phases"]:
        out.append("No filter or refiner changed any event.")
    out += render_flight_recorder(d.get("collectors", {}).get("flight_recorder"))
    for err in d.get("rule_errors", []):
        out.append(f"rule error {err['rule']}: {err['error']} ({err['where']})")
    return "\n".join(out)
