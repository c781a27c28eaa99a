"""Rules judged by production (`/rules`; the same numbers as JSON: `/api/rules`): per
rule, over a time window, the attempts it fired in, how often it made the root cause,
and the operators' judgements of those verdicts with the precision they give: the
numbers of `rulekit rules stats`, from the same function
(`rulekit.blueprint.rulestats.rule_stats`).  Must not write to the store."""
from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from rulekit.blueprint.dashboard import html
from rulekit.blueprint.dashboard.site import Site
from rulekit.blueprint.rulestats import rule_stats

NAV = ("Rules", "/rules", 30)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def rules_page(stats: dict[str, Any], q: dict[str, str]) -> str:
    form = ("<form method=get action='/rules'>"
            f"<label>since <input name=since size=20 value='{escape(q.get('since', ''))}' placeholder='30d'></label>"
            f"<label>until <input name=until size=20 value='{escape(q.get('until', ''))}'></label>"
            "<button type=submit>Show</button></form>")
    rows = [f"<tr data-rule='{escape(r['rule'])}'><td class=mono>{escape(r['rule'])}</td><td>{r['fired']}</td>"
            f"<td>{r['root']}</td><td>{r['confirmed']}</td><td>{r['wrong']}</td>"
            f"<td class=precision>{_pct(r['precision'])}</td><td>{html.symptoms(r['symptoms'])}</td></tr>"
            for r in stats["rules"]]
    api = "/api/rules" + ("?" + urlencode({k: v for k, v in q.items() if v}) if any(q.values()) else "")
    body = (f"<h1>Rules</h1>{form}<p class=summary>{stats['attempts']} attempt(s) in the window; "
            f"{len(stats['rules'])} rule(s) fired</p>"
            + html.table("rules", ("rule", "fired in", "root cause", "confirmed", "wrong", "precision", "symptoms"),
                         rows)
            + "<p class=muted>fired in: attempts whose verdict kept one of the rule's events as evidence; "
              "confirmed / wrong: the latest operator judgement of each attempt whose root cause came from the rule "
              "(<span class=mono>rulekit blueprint feedback</span>, or POST /api/jobs/JOB%23N/feedback).</p>"
            + f"<p><a href='{escape(api)}'>these rows as JSON</a></p>")
    return html.page("Rules", body, here="/rules")


def routes(site: Site) -> list[Route]:
    async def rules(request: Request) -> Response:
        q = {k: request.query_params.get(k, "") for k in ("since", "until")}
        since, until = site.window(q)
        c = site.con()
        try:
            stats = rule_stats(c, since, until)
        finally:
            c.close()
        if site.wants_json(request):
            return JSONResponse(stats)
        return HTMLResponse(rules_page(stats, q))

    return [Route("/rules", rules), Route("/api/rules", rules)]
