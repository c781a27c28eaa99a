"""The dashboard's page registry and what each page's routes get.

A page is a module in `rulekit.blueprint.dashboard.pages` with `routes(site) ->
list[Route]` and, if it belongs in the header, `NAV = (title, href, order)`.
`discover()` finds them by name (pkgutil), so adding a page is adding a module:
no other page or the app is edited.  `Site` is what a route needs: the store
(opened read-only per request; the feedback route alone writes), JSON-or-HTML errors, and the bad-parameter error.
Knows nothing of any one page.
"""
from __future__ import annotations

import importlib
import pkgutil
import sqlite3
from pathlib import Path
from types import ModuleType
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from rulekit.blueprint.dashboard import html
from rulekit.blueprint.model import parse_time
from rulekit.blueprint.store import open_ro


class BadParam(Exception):
    """A query parameter the page cannot use: a 400 naming it."""


class Site:
    def __init__(self, db: str | Path, policy: Any = None, token: str | None = None):
        self.db = Path(db)
        self.policy = policy  # the fleet policy (`rulekit.blueprint.fleet_policy.FleetPolicy`) pages read
        self.token = token  # the bearer token the one writing route (feedback) asks for, if set

    def con(self) -> sqlite3.Connection:
        return open_ro(self.db)

    @staticmethod
    def wants_json(request: Request) -> bool:
        return request.url.path.startswith("/api/")

    def fail(self, request: Request, status: int, msg: str) -> Response:
        if self.wants_json(request):
            return JSONResponse({"error": msg}, status_code=status)
        return HTMLResponse(html.error_page(status, msg), status_code=status)

    @staticmethod
    def window(q: Any) -> tuple[float | None, float | None]:
        """`since` / `until` of a query as epoch seconds (BadParam naming a bad one)."""
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


def discover() -> list[ModuleType]:
    """Every page module, in name order; their NAV entries fill the header."""
    from rulekit.blueprint.dashboard import pages

    mods = [importlib.import_module(f"{pages.__name__}.{m.name}")
            for m in sorted(pkgutil.iter_modules(pages.__path__), key=lambda m: m.name) if not m.name.startswith("_")]
    html.NAV[:] = sorted((m.NAV for m in mods if getattr(m, "NAV", None)), key=lambda n: n[2])
    return mods
