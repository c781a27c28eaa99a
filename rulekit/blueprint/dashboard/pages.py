"""HTML pages of the dashboard: the job list, one job, the fleet ranking and its
drill-down.  Plain server-rendered HTML with inline CSS (no script, no
external asset).  Pure: data in, text out; every value is escaped.
"""
from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from typing import Any, Iterable
from urllib.parse import quote, urlencode

from rulekit.blueprint.dashboard.timeline import timeline_svg

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{background:#23313f;color:#fff;padding:10px 20px}header a{color:#fff;margin-right:16px;text-decoration:none}
main{padding:16px 20px}table{border-collapse:collapse;margin:8px 0 18px}td,th{border:1px solid #ddd;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f4f6f8}.mono{font-family:ui-monospace,monospace;font-size:12px}
.outcome{font-weight:bold;text-transform:uppercase}.o-hardware,.o-network{color:#c0392b}.o-application{color:#8e44ad}
.o-timeout,.o-cancelled{color:#7f8c8d}.o-success{color:#27ae60}.warn{background:#fff4e5;border:1px solid #f0ad4e;
padding:8px 12px;margin:8px 0}.bad{color:#c0392b;font-weight:bold}form label{margin-right:10px}
.ok{color:#27ae60}.failed{color:#c0392b;font-weight:bold}.empty{color:#b9770e}
"""


def page(title: str, body: str) -> str:
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(title)} · rulekit</title>"
            f"<style>{CSS}</style></head><body><header><strong>rulekit</strong> &nbsp; "
            f"<a href='/jobs'>Jobs</a><a href='/fleet'>Fleet</a><a href='/api/jobs'>JSON</a></header>"
            f"<main>{body}</main></body></html>")


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ") if ts else "—"


def job_href(key: str) -> str:
    return "/jobs/" + quote(key, safe="")


def _outcome(o: str | None) -> str:
    return f"<span class='outcome o-{escape(o or 'none')}'>{escape(o or 'not attributed')}</span>"


def _select(name: str, options: Iterable[str], current: str | None) -> str:
    opts = "".join(f"<option value='{escape(o)}'{' selected' if o == current else ''}>{escape(o)}</option>"
                   for o in options)
    return f"<label>{name} <select name='{name}'><option value=''>any</option>{opts}</select></label>"


def jobs_page(rows: list[dict[str, Any]], facets: dict[str, list[str]], q: dict[str, str]) -> str:
    form = ("<form method=get action='/jobs'>" + _select("outcome", facets["outcome"], q.get("outcome"))
            + _select("sub_domain", facets["sub_domain"], q.get("sub_domain")) + _select("node", facets["node"], q.get("node"))
            + f"<label>since <input name=since size=20 value='{escape(q.get('since', ''))}' placeholder='2026-06-01 or 24h'></label>"
            + f"<label>until <input name=until size=20 value='{escape(q.get('until', ''))}'></label>"
            + "<button type=submit>Filter</button></form>")
    body = [f"<h1>Jobs</h1>{form}<p>{len(rows)} attempt(s)</p>",
            "<table class=jobs><tr><th>job</th><th>attempt</th><th>state</th><th>outcome</th><th>sub_domain</th>"
            "<th>root cause</th><th>bad nodes</th><th>evidence</th><th>ended</th></tr>"]
    for r in rows:
        body.append(
            f"<tr><td><a href='{job_href(r['key'])}'>{escape(r['job_id'])}</a></td><td>{r['attempt']}</td>"
            f"<td>{escape(r['state'] or '—')}</td><td>{_outcome(r['outcome'])}</td><td>{escape(r['sub_domain'] or '—')}</td>"
            f"<td class=mono>{escape(r['root_symptom'] or '—')}</td>"
            f"<td class=bad>{escape(', '.join(r['bad_nodes'])) or '—'}</td>"
            f"<td>{'complete' if r['evidence_complete'] else '<span class=failed>incomplete</span>'}</td>"
            f"<td>{_when(r['end_ts'])}</td></tr>")
    body.append("</table>")
    api = "/api/jobs" + ("?" + urlencode({k: v for k, v in q.items() if v}) if any(q.values()) else "")
    body.append(f"<p><a href='{escape(api)}'>these rows as JSON</a></p>")
    return page("Jobs", "".join(body))


def _symptoms(xs: Iterable[str]) -> str:
    return ", ".join(f"<span class=mono>{escape(s)}</span>" for s in xs) or "—"


def job_page(result: dict[str, Any]) -> str:
    v = result.get("verdict") or {}
    ctx = result.get("context") or {}
    cov = result.get("coverage") or {}
    rc = v.get("root_cause") or {}
    b = [f"<h1>Job {escape(result['job_id'])} <small>attempt {result['attempt']}</small></h1>"]
    if not result.get("verdict"):
        b.append("<div class=warn>This attempt was not attributed (see the coverage below).</div>")
    b.append(f"<p class=diagnosis>Outcome {_outcome(v.get('outcome'))} / <strong>{escape(v.get('sub_domain') or '—')}</strong>"
             + (f" &nbsp; confidence {escape(str(v['confidence']))}" if v.get("confidence") else "")
             + (" &nbsp; <strong>ambiguous</strong>" if v.get("ambiguous") else "") + "</p>")
    if rc:
        b.append(f"<p>Root cause <span class=mono>{escape(str(rc.get('symptom')))}</span> on "
                 f"<span class=bad>{escape(str(rc.get('node') or '—'))}</span> (rule {escape(str(rc.get('rule')))})</p>")
    if not cov.get("complete", True):
        failed = [c for c in cov.get("collectors", []) if c["status"] == "failed"]
        b.append("<div class='warn incomplete'><strong>Evidence incomplete:</strong> "
                 + "; ".join(f"{escape(c['collector'])} ({escape(c['type'])}): {escape(c['error'] or '')}" for c in failed)
                 + ". The diagnosis uses what was gathered.</div>")
    b.append("<h2>Bad nodes</h2>")
    if v.get("bad_nodes"):
        b.append("<table class=bad-nodes><tr><th>node</th><th>symptoms</th><th>blame</th><th>action</th><th>confidence</th></tr>")
        for n in v["bad_nodes"]:
            b.append(f"<tr><td class=bad>{escape(n['node'])}</td><td>{_symptoms(n.get('symptoms') or [])}</td>"
                     f"<td>{escape(str(n.get('blame') or '—'))}</td><td>{escape(str(n.get('action') or '—'))}</td>"
                     f"<td>{escape(str(n.get('confidence') or '—'))}</td></tr>")
        b.append("</table>")
    else:
        b.append("<p>None: no node is blamed.</p>")
    for title, field in (("Affected nodes", "affected_nodes"), ("Supporting symptoms (interesting nodes)", "interesting_nodes")):
        if v.get(field):
            b.append(f"<h2>{title}</h2><table><tr><th>node</th><th>symptoms</th></tr>")
            for n in v[field]:
                b.append(f"<tr><td>{escape(n['node'])}</td><td>{_symptoms(n.get('symptoms') or [])}</td></tr>")
            b.append("</table>")
    b.append("<h2>Timeline</h2>" + timeline_svg(result))
    b.append("<h2>Evidence trail</h2><table class=evidence><tr><th>kind</th><th>symptom</th><th>node</th><th>where</th>"
             "<th>rule</th><th>line</th></tr>")
    for e in v.get("evidence") or []:
        kind = (e.get("event_type") or "").rsplit(".", 1)[-1]
        where = f"{e.get('source')}:{e.get('line_num')}" if e.get("source") else "—"
        b.append(f"<tr><td>{escape(kind)}</td><td class=mono>{escape(str(e.get('symptom')))}</td>"
                 f"<td>{escape(str(e.get('node') or '—'))}</td><td class=mono>{escape(where)}</td>"
                 f"<td class=mono>{escape(str(e.get('rule')))}</td><td class=mono>{escape(str(e.get('datum') or ''))}</td></tr>")
    b.append("</table><h2>Collector coverage</h2><table class=coverage><tr><th>collector</th><th>kind</th><th>type</th>"
             "<th>status</th><th>observations</th><th>lines</th><th>series</th><th>seconds</th><th>error / notes</th></tr>")
    for c in cov.get("collectors", []):
        notes = "; ".join([c["error"]] if c.get("error") else []) + ("; ".join(c.get("details") or []))
        b.append(f"<tr><td>{escape(c['collector'])}</td><td>{escape(c['kind'])}</td><td>{escape(c['type'])}</td>"
                 f"<td class='{escape(c['status'])}'>{escape(c['status'])}</td><td>{c['observations']}</td><td>{c['lines']}</td>"
                 f"<td>{c['series']}</td><td>{c['seconds']}</td><td>{escape(notes) or '—'}</td></tr>")
    b.append("</table>")
    if result.get("metrics"):
        b.append("<h2>Metrics</h2><table><tr><th>node</th><th>name</th><th>samples</th><th>min</th><th>max</th></tr>")
        for m in result["metrics"]:
            b.append(f"<tr><td>{escape(str(m['node']))}</td><td class=mono>{escape(m['name'])}</td>"
                     f"<td>{len(m['samples'])}</td><td>{m['min']}</td><td>{m['max']}</td></tr>")
        b.append("</table>")
    b.append("<h2>Execution context</h2><table class=context>")
    for k in ("job_id", "attempt", "state", "exit_code", "nodes", "start", "end", "user", "partition", "cluster",
              "source", "collector"):
        val = ctx.get(k)
        b.append(f"<tr><th>{k}</th><td>{escape(', '.join(val) if isinstance(val, list) else str(val if val is not None else '—'))}</td></tr>")
    if ctx.get("steps"):
        steps = "; ".join(f"{s.get('name')}: {s.get('state')} exit {s.get('exit_code')}" for s in ctx["steps"])
        b.append(f"<tr><th>steps</th><td class=mono>{escape(steps)}</td></tr>")
    b.append(f"</table><p><a href='/api/jobs/{quote(result['key'], safe='')}'>this result as JSON</a></p>")
    return page(f"Job {result['job_id']}", "".join(b))


KIND_TITLES = {"node": "Nodes", "hca_port": "HCA ports", "switch_port": "Switch ports"}


def fleet_page(kind: str, rows: list[dict[str, Any]], q: dict[str, str], states: str = "") -> str:
    """The ranking of one kind; `states`: the node-state section (HTML) shown above it."""
    tabs = " | ".join(f"<a href='/fleet?{urlencode({**q, 'kind': k})}'>{'<strong>' + t + '</strong>' if k == kind else t}</a>"
                      for k, t in KIND_TITLES.items())
    form = (f"<form method=get action='/fleet'><input type=hidden name=kind value='{escape(kind)}'>"
            f"<label>since <input name=since size=20 value='{escape(q.get('since', ''))}' placeholder='7d'></label>"
            f"<label>until <input name=until size=20 value='{escape(q.get('until', ''))}'></label>"
            "<button type=submit>Window</button></form>")
    b = [f"<h1>Fleet</h1>{states}<h2>{KIND_TITLES[kind]} by distinct jobs blaming them</h2><p>{tabs}</p>{form}",
         "<table class=fleet><tr><th>#</th><th>name</th><th>distinct jobs</th><th>attempts</th><th>symptoms</th>"
         "<th>first</th><th>last</th></tr>"]
    for i, r in enumerate(rows, 1):
        href = f"/fleet/{kind}/{quote(r['name'], safe='')}" + ("?" + urlencode({k: v for k, v in q.items() if v and k != 'kind'})
                                                            if any(v for k, v in q.items() if k != 'kind') else "")
        b.append(f"<tr><td>{i}</td><td><a href='{escape(href)}'>{escape(r['name'])}</a></td><td>{r['jobs']}</td>"
                 f"<td>{r['attempts']}</td><td>{_symptoms(r['symptoms'])}</td><td>{_when(r['first_ts'])}</td>"
                 f"<td>{_when(r['last_ts'])}</td></tr>")
    b.append("</table>")
    if not rows:
        b.append("<p>Nothing blamed in this window.</p>")
    b.append(f"<p><a href='/api/fleet?{escape(urlencode({**q, 'kind': kind}))}'>this ranking as JSON</a></p>")
    return page("Fleet", "".join(b))


def fleet_item_page(kind: str, name: str, rows: list[dict[str, Any]]) -> str:
    b = [f"<h1>{escape(KIND_TITLES[kind][:-1])} {escape(name)}</h1><p>{len({r['job_id'] for r in rows})} distinct job(s)</p>",
         "<table><tr><th>job</th><th>attempt</th><th>outcome</th><th>sub_domain</th><th>symptoms</th><th>ended</th></tr>"]
    for r in rows:
        b.append(f"<tr><td><a href='{job_href(r['key'])}'>{escape(r['job_id'])}</a></td><td>{r['attempt']}</td>"
                 f"<td>{_outcome(r['outcome'])}</td><td>{escape(r['sub_domain'] or '—')}</td>"
                 f"<td>{_symptoms(r['symptoms'])}</td><td>{_when(r['end_ts'])}</td></tr>")
    b.append("</table>")
    return page(name, "".join(b))


def error_page(status: int, message: str) -> str:
    return page(f"Error {status}", f"<h1>Error {status}</h1><p>{escape(message)}</p><p><a href='/jobs'>back to the jobs</a></p>")
