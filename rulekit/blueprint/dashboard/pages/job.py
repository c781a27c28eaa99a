"""One job attempt as on-call reads it (`/jobs/{key}`; JSON: `/api/jobs/{key}`): the
diagnosis, the root cause with its action and the command to paste, the bad nodes
(linked to their fleet page), the timeline, the evidence in time order with why
each demoted symptom was demoted and a link to its raw lines, the collectors'
coverage and the execution context.  `/jobs/{key}/context?source=F&line=N` shows
the lines around one piece of evidence, from what the store holds for that result
(the request's `source` only selects among them: nothing is read from disk).
Must not write to the store.
"""
from __future__ import annotations

from html import escape
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from rulekit.blueprint.dashboard import html
from rulekit.blueprint.dashboard.site import BadParam, Site
from rulekit.blueprint.dashboard.timeline import is_root, parse, role, timeline_svg
from rulekit.blueprint.remedy import remedies
from rulekit.blueprint.store import get_result

KIND = {"bad": "blames", "interesting": "supporting", "other": "other"}


def in_time_order(evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Evidence with a time first, by time (then file and line), then the rest in the
    result's own order (blaming evidence first): a row without a time is never placed
    at a guessed one."""
    timed = [(parse(e.get("timestamp")), i, e) for i, e in enumerate(evidence)]
    with_t = sorted((x for x in timed if x[0] is not None),
                    key=lambda x: (x[0], str(x[2].get("source") or ""), x[2].get("line_num") or 0, x[1]))
    return [e for _, _, e in with_t] + [e for t, _, e in timed if t is None]


def _contexts(result: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(c["source"], c["line_num"]): c for c in result.get("evidence_context") or []
            if isinstance(c, dict) and isinstance(c.get("source"), str) and isinstance(c.get("line_num"), int)}


def _where(key: str, e: dict[str, Any], ctx: dict[tuple[str, int], Any]) -> str:
    src, n = e.get("source"), e.get("line_num")
    if not src:
        return "—"
    label = escape(f"{src}:{n}" if n else str(src))
    if (src, n) in ctx:
        return f"<a class=ctx href='{escape(html.context_href(key, src, n))}'>{label}</a>"
    return label


def root_box(result: dict[str, Any], ctx: dict[tuple[str, int], Any]) -> str:
    v = result.get("verdict") or {}
    rc = v.get("root_cause") or {}
    if not rc:
        return ""
    node = rc.get("node")
    entry = next((b for b in v.get("bad_nodes") or [] if b["node"] == node), None)
    action = (entry or rc).get("action") or "none"
    b = [f"<div class=root><h2>Root cause: <span class=mono>{html.text(rc.get('symptom'))}</span> on "
         f"{html.node_link(node, 'bad')}</h2>"]
    b.append(f"<p>Action: <span class=act>{escape(action)}</span>"
             + (f" <span class=muted>(printed by {escape(str((entry or rc).get('action_from')))})</span>"
                if (entry or rc).get("action_from") else "")
             + f" &nbsp; blame {html.text(rc.get('blame'))} &nbsp; rule <span class=mono>{html.text(rc.get('rule'))}</span></p>")
    cmds = remedies(result)
    for r in cmds:
        if r.command:
            b.append(f"<div class=muted>{escape(r.action)}:</div><pre class=command>{escape(r.command)}</pre>")
        else:
            b.append(f"<p class=muted>No command for {escape(r.action)}: {escape(r.why_not)}.</p>")
    first = (rc.get("evidence") or [None])[0]
    if first:
        b.append(f"<p>Evidence: {_where(result['key'], first, ctx)} "
                 f"<span class=mono>{escape(str(first.get('datum') or '')[:300])}</span></p>")
    b.append("</div>")
    return "".join(b)


def evidence_table(result: dict[str, Any], ctx: dict[tuple[str, int], Any]) -> str:
    v = result.get("verdict") or {}
    rc = v.get("root_cause") or {}
    rows = []
    untimed = 0
    for e in in_time_order(v.get("evidence") or []):
        r = role(e.get("event_type"))
        t = e.get("timestamp")
        if not t:
            untimed += 1
        why = ""
        if e.get("demoted"):
            d = e["demoted"]
            why = f"<span class=demoted>demoted by <span class=mono>{html.text(d.get('rule'))}</span>: {escape(str(d.get('reason') or ''))}</span>"
        kind = KIND[r] + (" (root cause)" if is_root(e, rc) else "")
        rows.append(f"<tr class='ev {r}'><td class='mono{'' if t else ' nt'}'>{escape(t) if t else 'no time'}</td>"
                    f"<td>{escape(kind)}</td><td class=mono>{html.text(e.get('symptom'))}</td>"
                    f"<td>{html.node_link(e.get('node'))}</td><td class=mono>{_where(result['key'], e, ctx)}</td>"
                    f"<td class=mono>{html.text(e.get('rule'))}</td><td>{why or '—'}</td>"
                    f"<td class=mono>{escape(str(e.get('datum') or '')[:400])}</td></tr>")
    note = (f"<p class=muted>In time order; {untimed} row(s) whose line carries no time stamp follow, in the "
            "diagnosis's order.</p>" if untimed else "<p class=muted>In time order.</p>")
    omitted = v.get("evidence_omitted")
    more = f"<p class=muted>{omitted} more piece(s) of evidence left out of the result.</p>" if omitted else ""
    return note + html.table("evidence", ("time", "kind", "symptom", "node", "where", "rule", "why demoted", "line"),
                             rows) + more


def job_page(result: dict[str, Any]) -> str:
    v = result.get("verdict") or {}
    ctx_rows = _contexts(result)
    execution = result.get("context") or {}
    cov = result.get("coverage") or {}
    b = [f"<h1>Job {escape(result['job_id'])} <small>attempt {result['attempt']}</small></h1>"]
    if not result.get("verdict"):
        b.append("<div class=warn>This attempt was not attributed (see the coverage below).</div>")
    b.append(f"<p class=diagnosis>Outcome {html.outcome(v.get('outcome'))} / <strong>{html.text(v.get('sub_domain'))}</strong>"
             + (f" &nbsp; confidence {escape(str(v['confidence']))}" if v.get("confidence") else "")
             + (" &nbsp; <strong>ambiguous</strong>" if v.get("ambiguous") else "") + "</p>")
    if not cov.get("complete", True):
        failed = [c for c in cov.get("collectors", []) if c["status"] == "failed"]
        b.append("<div class='warn incomplete'><strong>Evidence incomplete:</strong> "
                 + "; ".join(f"{escape(c['collector'])} ({escape(c['type'])}): {escape(c['error'] or '')}" for c in failed)
                 + ". The diagnosis uses what was gathered.</div>")
    b.append(root_box(result, ctx_rows))
    b.append("<h2>Bad nodes</h2>")
    if v.get("bad_nodes"):
        b.append(html.table("bad-nodes", ("node", "symptoms", "blame", "action", "confidence"), [
            f"<tr><td>{html.node_link(n['node'], 'bad')}</td><td>{html.symptoms(n.get('symptoms') or [])}</td>"
            f"<td>{html.text(n.get('blame'))}</td><td>{html.text(n.get('action'))}</td>"
            f"<td>{html.text(n.get('confidence'))}</td></tr>" for n in v["bad_nodes"]]))
    else:
        b.append("<p>None: no node is blamed.</p>")
    for title, field in (("Affected nodes", "affected_nodes"), ("Supporting symptoms (interesting nodes)", "interesting_nodes")):
        if v.get(field):
            b.append(f"<h2>{title}</h2>" + html.table(field.replace("_", "-"), ("node", "symptoms"), [
                f"<tr><td>{html.node_link(n['node'])}</td><td>{html.symptoms(n.get('symptoms') or [])}</td></tr>"
                for n in v[field]]))
    b.append("<h2>Timeline</h2>" + timeline_svg(result))
    b.append("<h2>Evidence trail</h2>" + evidence_table(result, ctx_rows))
    b.append("<h2>Collector coverage</h2>" + html.table("coverage", (
        "collector", "kind", "type", "status", "observations", "lines", "series", "seconds", "error / notes"), [
        f"<tr><td>{escape(c['collector'])}</td><td>{escape(c['kind'])}</td><td>{escape(c['type'])}</td>"
        f"<td class='{escape(c['status'])}'>{escape(c['status'])}</td><td>{c['observations']}</td><td>{c['lines']}</td>"
        f"<td>{c['series']}</td><td>{c['seconds']}</td><td>"
        f"{escape('; '.join([c['error']] if c.get('error') else []) + '; '.join(c.get('details') or [])) or '—'}</td></tr>"
        for c in cov.get("collectors", [])]))
    if result.get("metrics"):
        b.append("<h2>Metrics</h2>" + html.table("metrics", ("node", "name", "samples", "min", "max"), [
            f"<tr><td>{html.node_link(m.get('node'))}</td><td class=mono>{escape(m['name'])}</td>"
            f"<td>{len(m['samples'])}</td><td>{m['min']}</td><td>{m['max']}</td></tr>" for m in result["metrics"]]))
    rows = []
    for k in ("job_id", "attempt", "state", "exit_code", "nodes", "start", "end", "user", "partition", "cluster",
              "source", "collector"):
        val = execution.get(k)
        shown = (", ".join(html.node_link(n) for n in val) if k == "nodes" and isinstance(val, list) else
                 escape(", ".join(val) if isinstance(val, list) else str(val if val is not None else "—")))
        rows.append(f"<tr><th>{k}</th><td>{shown}</td></tr>")
    if execution.get("steps"):
        steps = "; ".join(f"{s.get('name')}: {s.get('state')} exit {s.get('exit_code')}" for s in execution["steps"])
        rows.append(f"<tr><th>steps</th><td class=mono>{escape(steps)}</td></tr>")
    b.append("<h2>Execution context</h2><table class=context>" + "".join(rows) + "</table>")
    b.append(f"<p><a href='/api{html.job_href(result['key'])}'>this result as JSON</a></p>")
    return html.page(f"Job {result['job_id']}", "".join(b))


def context_page(result: dict[str, Any], window: dict[str, Any]) -> str:
    v = result.get("verdict") or {}
    src, n = window["source"], window["line_num"]
    here = [e for e in v.get("evidence") or [] if e.get("source") == src and e.get("line_num") == n]
    rows = [f"<tr class='{'hit' if window['first'] + i == n else ''}'><td class='n mono'>{window['first'] + i}</td>"
            f"<td class=mono>{escape(line)}</td></tr>" for i, line in enumerate(window["lines"])]
    b = [f"<h1>{escape(src)}:{n}</h1>",
         f"<p>Job <a href='{html.job_href(result['key'])}'>{escape(result['job_id'])}</a> attempt {result['attempt']}: "
         f"the lines around this evidence, as collected.</p>",
         "<table class=lines>" + "".join(rows) + "</table>"]
    if here:
        b.append("<h2>Evidence from this line</h2>" + html.table("line-evidence", ("kind", "symptom", "node", "rule", "why demoted"), [
            f"<tr><td>{KIND[role(e.get('event_type'))]}</td><td class=mono>{html.text(e.get('symptom'))}</td>"
            f"<td>{html.node_link(e.get('node'))}</td><td class=mono>{html.text(e.get('rule'))}</td>"
            f"<td>{escape(str((e.get('demoted') or {}).get('reason') or '—'))}</td></tr>" for e in here]))
    return html.page(f"{src}:{n}", "".join(b))


def routes(site: Site) -> list[Route]:
    def load(request: Request) -> dict[str, Any] | None:
        c = site.con()
        try:
            return get_result(c, request.path_params["key"])
        finally:
            c.close()

    async def job(request: Request) -> Response:
        r = load(request)
        if r is None:
            return site.fail(request, 404, f"no result for job attempt {request.path_params['key']!r}")
        return JSONResponse(r) if site.wants_json(request) else HTMLResponse(job_page(r))

    async def context(request: Request) -> Response:
        source = request.query_params.get("source") or ""
        try:
            line = int(request.query_params.get("line") or "")
        except ValueError:
            raise BadParam("`line` must be a line number") from None
        r = load(request)
        if r is None:
            return site.fail(request, 404, f"no result for job attempt {request.path_params['key']!r}")
        window = _contexts(r).get((source, line))
        if window is None:  # only what the store holds for this result: never a path from the request
            return site.fail(request, 404, f"no stored lines for {source}:{line} in this result")
        return JSONResponse(window) if site.wants_json(request) else HTMLResponse(context_page(r, window))

    return [Route("/jobs/{key:path}/context", context), Route("/api/jobs/{key:path}/context", context),
            Route("/jobs/{key:path}", job), Route("/api/jobs/{key:path}", job)]
