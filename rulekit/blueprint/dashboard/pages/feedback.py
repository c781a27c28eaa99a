"""Verdict feedback over HTTP: `POST /api/jobs/{JOB#N}/feedback` records an operator's
judgement of an attempt's diagnosis in the store the dashboard serves (the same
`feedback` table and function, `rulekit.blueprint.rulestats.record_feedback`, as
`rulekit blueprint feedback`), with who and when.

The body is JSON, validated (pydantic) with the bad field named: 422
`{"error", "detail": [{"loc": ["body", FIELD], "msg"}]}`; not JSON 400; longer than
`MAX_BODY` 413; an unknown attempt 404.  Who may write: with `RULEKIT_DASHBOARD_TOKEN`
set where the dashboard runs, a request carrying `Authorization: Bearer <token>` (401
otherwise), as the Service's token; without it, only a client on the loopback
address (403 otherwise).  Either way the body must be `application/json` (415), which
a cross-site HTML form cannot send.  The only route of the dashboard that writes;
it never creates or migrates a store.
"""
from __future__ import annotations

import json
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from rulekit.blueprint.dashboard.site import Site
from rulekit.rules.model import OUTCOMES

MAX_BODY = 64 * 1024
LOOPBACK = ("127.0.0.1", "::1", "localhost")


class FeedbackBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Literal["confirmed", "wrong"]
    who: StrictStr = Field(min_length=1, max_length=200)
    outcome: Optional[Literal[OUTCOMES]] = None  # type: ignore[valid-type]
    symptom: Optional[StrictStr] = Field(default=None, min_length=1, max_length=200)
    nodes: list[StrictStr] = Field(default_factory=list, max_length=4096)
    note: Optional[StrictStr] = Field(default=None, max_length=4000)


def _err(status: int, msg: str, detail: list | None = None, headers: dict | None = None) -> Response:
    body = {"error": msg}
    if detail is not None:
        body["detail"] = detail
    return JSONResponse(body, status_code=status, headers=headers)


def _allowed(request: Request, token: str | None) -> Response | None:
    if token is not None:
        from rulekit.service.security import authorized

        if not authorized(request.scope.get("headers", []), token):
            return _err(401, "a valid `Authorization: Bearer <token>` is required",
                        [{"loc": ["header", "authorization"], "msg": "missing or wrong bearer token"}],
                        {"WWW-Authenticate": 'Bearer realm="rulekit"'})
        return None
    host = request.client.host if request.client else ""
    if host not in LOOPBACK:
        return _err(403, "feedback over HTTP from another host needs RULEKIT_DASHBOARD_TOKEN set where the "
                    "dashboard runs (and `Authorization: Bearer <token>`)")
    return None


async def _body(request: Request) -> bytes | None:
    got = bytearray()
    async for chunk in request.stream():
        got += chunk
        if len(got) > MAX_BODY:
            return None
    return bytes(got)


def routes(site: Site) -> list[Route]:
    async def post_feedback(request: Request) -> Response:
        from rulekit.blueprint.rulestats import FeedbackError, record_feedback
        from rulekit.blueprint.store import open_rw

        refused = _allowed(request, getattr(site, "token", None))
        if refused is not None:
            return refused
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            return _err(415, "the body must be JSON (`Content-Type: application/json`)")
        raw = await _body(request)
        if raw is None:
            return _err(413, f"the body is longer than {MAX_BODY} bytes")
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            return _err(400, f"the body is not JSON: {getattr(e, 'msg', e)}")
        try:
            body = FeedbackBody.model_validate(data)
        except ValidationError as e:
            detail = [{"loc": ["body", *[str(x) for x in err.get("loc", ())]], "msg": err.get("msg")}
                      for err in e.errors(include_url=False)]
            first = detail[0]
            return _err(422, f"`{'.'.join(first['loc'][1:]) or 'body'}`: {first['msg']}", detail)
        key = request.path_params["key"]
        con = open_rw(site.db)
        try:
            row = record_feedback(con, key, body.verdict, body.who, outcome=body.outcome, symptom=body.symptom,
                                  nodes=body.nodes, note=body.note)
        except FeedbackError as e:
            field, _, _ = str(e).partition(":")
            return _err(404 if field == "attempt" else 422, str(e),
                        [{"loc": ["body" if field != "attempt" else "path", field], "msg": str(e)}])
        finally:
            con.close()
        return JSONResponse(row, status_code=201)

    return [Route("/api/jobs/{key:path}/feedback", post_feedback, methods=["POST"])]
