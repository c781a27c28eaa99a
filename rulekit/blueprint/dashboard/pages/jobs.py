"""The job list: every stored attempt, newest first, filtered by outcome,
sub-domain, node and time window (`/jobs`; the same rows as JSON: `/api/jobs`).
Must not write to the store."""
from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from rulekit.blueprint.dashboard import html
from rulekit.blueprint.dashboard.site import Site
from rulekit.blueprint.store import facets, list_jobs

NAV = ("Jobs", "/jobs", 10)
FILTERS = ("outcome", "sub_domain", "node", "since", "until")


def jobs_page(rows: list[dict[str, Any]], facet: dict[str, list[str]], q: dict[str, str]) -> str:
    form = ("<form method=get action='/jobs'>" + html.select("outcome", facet["outcome"], q.get("outcome"))
            + html.select("sub_domain", facet["sub_domain"], q.get("sub_domain"))
            + html.select("node", facet["node"], q.get("node"))
            + f"<label>since <input name=since size=20 value='{escape(q.get('since', ''))}' placeholder='2026-06-01 or 24h'></label>"
            + f"<label>until <input name=until size=20 value='{escape(q.get('until', ''))}'></label>"
            + "<button type=submit>Filter</button></form>")
    rows_html = []
    for r in rows:
        bad = ", ".join(html.node_link(n) for n in r["bad_nodes"]) or "—"
        rows_html.append(
            f"<tr><td><a href='{html.job_href(r['key'])}'>{escape(r['job_id'])}</a></td><td>{r['attempt']}</td>"
            f"<td>{html.text(r['state'])}</td><td>{html.outcome(r['outcome'])}</td><td>{html.text(r['sub_domain'])}</td>"
            f"<td class=mono>{html.text(r['root_symptom'])}</td><td class=bad>{bad}</td>"
            f"<td>{'complete' if r['evidence_complete'] else '<span class=failed>incomplete</span>'}</td>"
            f"<td>{html.when(r['end_ts'])}</td></tr>")
    api = "/api/jobs" + ("?" + urlencode({k: v for k, v in q.items() if v}) if any(q.values()) else "")
    body = (f"<h1>Jobs</h1>{form}<p>{len(rows)} attempt(s)</p>"
            + html.table("jobs", ("job", "attempt", "state", "outcome", "sub_domain", "root cause", "bad nodes",
                                  "evidence", "ended"), rows_html)
            + f"<p><a href='{escape(api)}'>these rows as JSON</a></p>")
    return html.page("Jobs", body, here="/jobs")


def routes(site: Site) -> list[Route]:
    async def jobs(request: Request) -> Response:
        q = {k: request.query_params.get(k, "") for k in FILTERS}
        since, until = site.window(q)
        c = site.con()
        try:
            rows = list_jobs(c, q["outcome"] or None, q["sub_domain"] or None, q["node"] or None, since, until)
            if site.wants_json(request):
                return JSONResponse({"jobs": rows, "count": len(rows)})
            return HTMLResponse(jobs_page(rows, facets(c), q))
        finally:
            c.close()

    async def facets_view(request: Request) -> Response:
        c = site.con()
        try:
            return JSONResponse(facets(c))
        finally:
            c.close()

    return [Route("/jobs", jobs), Route("/api/jobs", jobs), Route("/api/facets", facets_view)]
