"""The dashboard's ASGI application (Starlette): routes, query parsing, errors.

    GET /jobs?outcome=&sub_domain=&node=&since=&until=   job list      (JSON: /api/jobs)
    GET /jobs/{key}                                       one result    (JSON: /api/jobs/{key})
    GET /fleet?kind=node|hca_port|switch_port&since=&until=  ranking    (JSON: /api/fleet)
    GET /fleet/{kind}/{name}                              drill-down    (JSON: /api/fleet/{kind}/{name})
    GET /api/facets                                       filter values
    GET /api/fleet/states                                 node states, breaker, proposed drains
    GET /metrics                                          Prometheus exposition (`fleet_metrics`)
Read-only (the store is opened `mode=ro` per request).  A bad parameter is a
400 with the parameter named, an unknown job a 404, anything else a 500 page
with an error id: never a dropped connection.
"""
from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from rulekit.blueprint import drains
from rulekit.blueprint.dashboard import pages
from rulekit.blueprint.dashboard.fleet_states import states_section
from rulekit.blueprint.fleet_memory import CachedFleetState
from rulekit.blueprint.fleet_metrics import CONTENT_TYPE, exposition, store_registry
from rulekit.blueprint.fleet_policy import FleetPolicy
from rulekit.blueprint.model import parse_time
from rulekit.blueprint.store import StoreError, facets, fleet, fleet_item, get_result, list_jobs, open_ro

log = logging.getLogger("rulekit.dashboard")
KINDS = tuple(pages.KIND_TITLES)


class BadParam(Exception):
    pass


def _window(q: Any) -> tuple[float | None, float | None]:
    out = []
    for k in ("since", "until"):
        v = (q.get(k) or "").strip()
        if not v:
            out.append(None)
            continue
        try:
            out.append(parse_time(v).timestamp())
        except ValueError as e:
            raise BadParam(f"`{k}`: {e}") from None
    return out[0], out[1]


def _kind(k: str | None) -> str:
    k = k or "node"
    if k not in KINDS:
        raise BadParam(f"`kind` must be one of {', '.join(KINDS)}, not {k!r}")
    return k


def create_app(db: str | Path, policy: FleetPolicy | None = None) -> Starlette:
    db = Path(db)
    policy = policy or FleetPolicy.defaults()
    states = CachedFleetState(db, policy)
    registry = store_registry(db, policy, states)

    def states_doc() -> dict[str, Any]:
        st = states.get()
        doc = st.to_dict()
        doc["proposals"] = drains.proposed(st.proposals)
        return doc

    def con():
        return open_ro(db)

    def wants_json(request: Request) -> bool:
        return request.url.path.startswith("/api/")

    def fail(request: Request, status: int, msg: str) -> Response:
        if wants_json(request):
            return JSONResponse({"error": msg}, status_code=status)
        return HTMLResponse(pages.error_page(status, msg), status_code=status)

    async def jobs(request: Request) -> Response:
        q = {k: request.query_params.get(k, "") for k in ("outcome", "sub_domain", "node", "since", "until")}
        since, until = _window(q)
        c = con()
        try:
            rows = list_jobs(c, q["outcome"] or None, q["sub_domain"] or None, q["node"] or None, since, until)
            if wants_json(request):
                return JSONResponse({"jobs": rows, "count": len(rows)})
            return HTMLResponse(pages.jobs_page(rows, facets(c), q))
        finally:
            c.close()

    async def job(request: Request) -> Response:
        key = request.path_params["key"]
        c = con()
        try:
            r = get_result(c, key)
        finally:
            c.close()
        if r is None:
            return fail(request, 404, f"no result for job attempt {key!r}")
        return JSONResponse(r) if wants_json(request) else HTMLResponse(pages.job_page(r))

    async def fleet_view(request: Request) -> Response:
        kind = _kind(request.query_params.get("kind"))
        q = {k: request.query_params.get(k, "") for k in ("since", "until")}
        since, until = _window(q)
        c = con()
        try:
            rows = fleet(c, kind, since, until)
        finally:
            c.close()
        if wants_json(request):
            return JSONResponse({"kind": kind, "since": since, "until": until, "ranking": rows})
        return HTMLResponse(pages.fleet_page(kind, rows, q, states_section(states_doc()) if kind == "node" else ""))

    async def fleet_states(request: Request) -> Response:
        return JSONResponse(states_doc())

    async def metrics(request: Request) -> Response:
        return Response(exposition(registry), media_type=CONTENT_TYPE)

    async def fleet_drill(request: Request) -> Response:
        kind = _kind(request.path_params["kind"])
        name = request.path_params["name"]
        since, until = _window(request.query_params)
        c = con()
        try:
            rows = fleet_item(c, kind, name, since, until)
        finally:
            c.close()
        if wants_json(request):
            return JSONResponse({"kind": kind, "name": name, "jobs": rows,
                                 "distinct_jobs": len({r["job_id"] for r in rows})})
        return HTMLResponse(pages.fleet_item_page(kind, name, rows))

    async def facets_view(request: Request) -> Response:
        c = con()
        try:
            return JSONResponse(facets(c))
        finally:
            c.close()

    async def root(request: Request) -> Response:
        return RedirectResponse("/jobs")

    async def bad_param(request: Request, exc: Exception) -> Response:
        return fail(request, 400, str(exc))

    async def store_error(request: Request, exc: Exception) -> Response:
        return fail(request, 503, str(exc))

    async def server_error(request: Request, exc: Exception) -> Response:
        eid = uuid.uuid4().hex[:8]
        log.exception("dashboard error %s", eid)
        return fail(request, 500, f"internal error (id {eid})")

    async def not_found(request: Request, exc: Exception) -> Response:
        return fail(request, 404, f"no such page: {request.url.path}")

    routes = [Route("/", root), Route("/jobs", jobs), Route("/jobs/{key:path}", job),
              Route("/fleet", fleet_view), Route("/fleet/{kind}/{name:path}", fleet_drill),
              Route("/api/jobs", jobs), Route("/api/jobs/{key:path}", job), Route("/api/fleet", fleet_view),
              Route("/api/fleet/states", fleet_states), Route("/api/fleet/{kind}/{name:path}", fleet_drill),
              Route("/api/facets", facets_view), Route("/metrics", metrics)]
    return Starlette(routes=routes, exception_handlers={BadParam: bad_param, StoreError: store_error,
                                                        404: not_found, Exception: server_error})
