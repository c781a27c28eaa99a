"""The dashboard's ASGI application (Starlette): the routes of every page module
(`site.discover()`: `pages/jobs.py`, `pages/job.py`, `pages/fleet.py`, ...), the
root redirect, and the error map.

Read-only (the store is opened `mode=ro` per request), but for verdict feedback
(`pages/feedback.py`: one row a POST, its own auth rule).  A bad parameter is a
400 with the parameter named, an unknown job a 404, an unusable store a 503,
anything else a 500 page with an error id: never a dropped connection.
"""
from __future__ import annotations

import logging
import uuid
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from rulekit.blueprint.dashboard.site import BadParam, Site, discover
from rulekit.blueprint.fleet_policy import FleetPolicy
from rulekit.blueprint.store import StoreError

log = logging.getLogger("rulekit.dashboard")


def create_app(db: str | Path, policy: FleetPolicy | None = None, token: str | None = None) -> Starlette:
    """`policy`: the fleet policy of the fleet page and /metrics (the defaults when None);
    `token`: the bearer token feedback requests must carry (None: loopback clients only)."""
    site = Site(db, policy or FleetPolicy.defaults(), token)

    async def root(request: Request) -> Response:
        return RedirectResponse("/jobs")

    async def bad_param(request: Request, exc: Exception) -> Response:
        return site.fail(request, 400, str(exc))

    async def store_error(request: Request, exc: Exception) -> Response:
        return site.fail(request, 503, str(exc))

    async def server_error(request: Request, exc: Exception) -> Response:
        eid = uuid.uuid4().hex[:8]
        log.exception("dashboard error %s", eid)
        return site.fail(request, 500, f"internal error (id {eid})")

    async def not_found(request: Request, exc: Exception) -> Response:
        return site.fail(request, 404, f"no such page: {request.url.path}")

    routes = [Route("/", root)]
    for page in discover():
        routes += page.routes(site)
    return Starlette(routes=routes, exception_handlers={BadParam: bad_param, StoreError: store_error,
                                                        404: not_found, Exception: server_error})
