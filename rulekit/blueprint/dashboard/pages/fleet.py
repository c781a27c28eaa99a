"""The fleet: the node states with their reasons, the circuit breaker and the
proposed drains (`/api/fleet/states`), components (nodes, HCA ports, switch ports)
ranked by how many distinct jobs blamed them in a window (`/fleet`), one
component's jobs (`/fleet/{kind}/{name}`, where node names link from every other
page), JSON under `/api/fleet`, and the Prometheus exposition (`/metrics`).  Must
not write to the store."""
from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from rulekit.blueprint import drains
from rulekit.blueprint.dashboard import html
from rulekit.blueprint.dashboard.fleet_states import states_section
from rulekit.blueprint.dashboard.site import BadParam, Site
from rulekit.blueprint.fleet_memory import CachedFleetState
from rulekit.blueprint.fleet_metrics import CONTENT_TYPE, exposition, store_registry
from rulekit.blueprint.fleet_policy import FleetPolicy
from rulekit.blueprint.store import fleet, fleet_item

NAV = ("Fleet", "/fleet", 20)
KIND_TITLES = {"node": "Nodes", "hca_port": "HCA ports", "switch_port": "Switch ports"}


def _kind(k: str | None) -> str:
    k = k or "node"
    if k not in KIND_TITLES:
        raise BadParam(f"`kind` must be one of {', '.join(KIND_TITLES)}, not {k!r}")
    return k


def fleet_page(kind: str, rows: list[dict[str, Any]], q: dict[str, str], states: str = "") -> str:
    """The ranking of one kind; `states`: the node-state section (HTML) shown above it."""
    tabs = " | ".join(f"<a href='/fleet?{urlencode({**q, 'kind': k})}'>{'<strong>' + t + '</strong>' if k == kind else t}</a>"
                      for k, t in KIND_TITLES.items())
    form = (f"<form method=get action='/fleet'><input type=hidden name=kind value='{escape(kind)}'>"
            f"<label>since <input name=since size=20 value='{escape(q.get('since', ''))}' placeholder='7d'></label>"
            f"<label>until <input name=until size=20 value='{escape(q.get('until', ''))}'></label>"
            "<button type=submit>Window</button></form>")
    window = {k: v for k, v in q.items() if v and k != "kind"}
    rows_html = []
    for i, r in enumerate(rows, 1):
        href = f"/fleet/{kind}/{quote(r['name'], safe='')}" + ("?" + urlencode(window) if window else "")
        rows_html.append(f"<tr><td>{i}</td><td><a href='{escape(href)}'>{escape(r['name'])}</a></td><td>{r['jobs']}</td>"
                         f"<td>{r['attempts']}</td><td>{html.symptoms(r['symptoms'])}</td><td>{html.when(r['first_ts'])}</td>"
                         f"<td>{html.when(r['last_ts'])}</td></tr>")
    body = (f"<h1>Fleet</h1>{states}<h2>{KIND_TITLES[kind]} by distinct jobs blaming them</h2><p>{tabs}</p>{form}"
            + html.table("fleet", ("#", "name", "distinct jobs", "attempts", "symptoms", "first", "last"), rows_html)
            + ("" if rows else "<p>Nothing blamed in this window.</p>")
            + f"<p><a href='/api/fleet?{escape(urlencode({**q, 'kind': kind}))}'>this ranking as JSON</a></p>")
    return html.page("Fleet", body, here="/fleet")


def fleet_item_page(kind: str, name: str, rows: list[dict[str, Any]]) -> str:
    rows_html = [f"<tr><td><a href='{html.job_href(r['key'])}'>{escape(r['job_id'])}</a></td><td>{r['attempt']}</td>"
                 f"<td>{html.outcome(r['outcome'])}</td><td>{html.text(r['sub_domain'])}</td>"
                 f"<td>{html.symptoms(r['symptoms'])}</td><td>{html.when(r['end_ts'])}</td></tr>" for r in rows]
    body = (f"<h1>{escape(KIND_TITLES[kind][:-1])} {escape(name)}</h1><p>{len({r['job_id'] for r in rows})} distinct job(s)</p>"
            + html.table("fleet-item", ("job", "attempt", "outcome", "sub_domain", "symptoms", "ended"), rows_html)
            + f"<p><a href='/api/fleet/{escape(kind)}/{escape(quote(name, safe=''))}'>these jobs as JSON</a></p>")
    return html.page(name, body, here="/fleet")


def routes(site: Site) -> list[Route]:
    policy = site.policy or FleetPolicy.defaults()
    states = CachedFleetState(site.db, policy)
    registry = store_registry(site.db, policy, states)

    def states_doc() -> dict[str, Any]:
        st = states.get()
        doc = st.to_dict()
        doc["proposals"] = drains.proposed(st.proposals)
        return doc

    async def fleet_states(request: Request) -> Response:
        return JSONResponse(states_doc())

    async def metrics(request: Request) -> Response:
        return Response(exposition(registry), media_type=CONTENT_TYPE)

    async def ranking(request: Request) -> Response:
        kind = _kind(request.query_params.get("kind"))
        q = {k: request.query_params.get(k, "") for k in ("since", "until")}
        since, until = site.window(q)
        c = site.con()
        try:
            rows = fleet(c, kind, since, until)
        finally:
            c.close()
        if site.wants_json(request):
            return JSONResponse({"kind": kind, "since": since, "until": until, "ranking": rows})
        return HTMLResponse(fleet_page(kind, rows, q, states_section(states_doc()) if kind == "node" else ""))

    async def drill(request: Request) -> Response:
        kind = _kind(request.path_params["kind"])
        name = request.path_params["name"]
        since, until = site.window(request.query_params)
        c = site.con()
        try:
            rows = fleet_item(c, kind, name, since, until)
        finally:
            c.close()
        if site.wants_json(request):
            return JSONResponse({"kind": kind, "name": name, "jobs": rows,
                                 "distinct_jobs": len({r["job_id"] for r in rows})})
        return HTMLResponse(fleet_item_page(kind, name, rows))

    return [Route("/fleet", ranking), Route("/fleet/{kind}/{name:path}", drill),
            Route("/api/fleet", ranking), Route("/api/fleet/states", fleet_states),
            Route("/api/fleet/{kind}/{name:path}", drill), Route("/metrics", metrics)]
