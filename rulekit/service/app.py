"""The Attribution Service's HTTP application (FastAPI): routes, errors, auth.

`create_app(engine, settings, ...)` builds the ASGI app around one loaded
corpus (one per worker process).  Routes:

  POST   /v1/attribute                 job + observations -> result (one shot)
  POST   /v1/jobs                      job record -> {"id"} (the spec's cycle)
  POST   /v1/jobs/{id}/observations    ingest a batch (any number of times)
  POST   /v1/jobs/{id}/attribute       preliminary / final result of what was ingested
  GET    /v1/jobs/{id}                 what the open job holds
  DELETE /v1/jobs/{id}                 retire it (Session.close(flush=False))
  GET    /v1/health                    corpus hash, rule and symptom counts, self-test
  GET    /v1/symptoms, /v1/rules       the registry and the rules (never uploaded)
  GET    /metrics                      Prometheus exposition (`rulekit.service.metrics`; summed
                                       over the workers)

Errors are data: every rejection is `{"detail": [{"loc", "msg", "type"}]}` with
the field's path in `loc` (400 for a body that is not JSON or not UTF-8, 413
too large or too many JSON values, 408 too slow, 401 bad token, 404, 405, 422
for a field, 429 when the job store is full, 503 past the request deadline);
an unexpected exception (a rule's SystemExit included) is a 500 with an
`error_id` that the server log repeats with the traceback.  Request bodies are
parsed by pydantic straight from bytes.  CPU work runs in a worker thread
(`rulekit.service.threads`), so the event loop keeps accepting connections,
within the request deadline (past it the thread is abandoned; rule code runs
under its time budget, so a looping rule ends it).  Every answer carries nosniff and CSP headers (`security`).

`POST /v1/attribute`, the request a client of many small jobs sends, is answered
by the same endpoint and error handlers without FastAPI's routing and middleware
stack (`_Direct`, between the body limit and FastAPI: ~20 % of a small job's
time); its result is serialized in the request thread, to the bytes FastAPI's
own serializer gives.  Every other route goes through FastAPI.
"""
from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
import uuid
from contextlib import asynccontextmanager
from typing import Any, Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from rulekit.inputs.jobrecord import JobRecordError, problems_of
from rulekit.engine.session import Session
from rulekit.service.jobs import JobNotFound, JobStore, StoreFull
from rulekit.service.limits import BodyLimit
from rulekit.service.security import SecurityHeaders
from rulekit.service.threads import Threads
from rulekit.service.metrics import ServiceMetrics
from rulekit.service.schema import (
    AttributeRequest,
    CreateJob,
    ErrorBody,
    Ingested,
    JobCreated,
    JobStatus,
    ObservationBatch,
)
from rulekit.service.settings import ServiceSettings

log = logging.getLogger("rulekit.service")

API_VERSION = "1"
ERRORS = {400: {"model": ErrorBody, "description": "not JSON / not UTF-8"},
          401: {"model": ErrorBody, "description": "missing or wrong bearer token"},
          413: {"model": ErrorBody, "description": "body over the size limit"},
          422: {"model": ErrorBody, "description": "a field is invalid (`loc` names it)"},
          500: {"model": ErrorBody, "description": "internal error (a bug), with an error id"}}
JOB_ERRORS = {**ERRORS, 404: {"model": ErrorBody, "description": "no such open job"}}
# a result's JSON: what FastAPI gives for an endpoint's `dict[str, Any]` (its validation, then its dump_json)
_RESULT = TypeAdapter(dict[str, Any])


class ApiError(Exception):
    def __init__(self, status: int, items: list[dict[str, Any]], headers: dict[str, str] | None = None,
                 error_id: str | None = None):
        self.status = status
        self.items = items
        self.headers = headers
        self.error_id = error_id


def _item(loc: list, msg: str, kind: str) -> dict[str, Any]:
    return {"loc": loc, "msg": msg, "type": kind}


def parse_body(model: type[BaseModel], raw: bytes) -> Any:
    """Bytes -> a validated model, or ApiError(400 / 422) naming the field."""
    if not raw.strip():
        raise ApiError(400, [_item(["body"], "the request body is empty; send a JSON object", "empty_body")])
    try:
        return model.model_validate_json(raw)
    except ValidationError as e:
        items = []
        bad_json = False
        for err in e.errors(include_url=False, include_input=False):
            kind = err.get("type", "value_error")
            if kind == "json_invalid":
                bad_json = True
                msg = str(err.get("msg", "invalid JSON"))
                ctx = err.get("ctx") or {}
                if ctx.get("error"):
                    what = "UTF-8 JSON" if "unicode" in str(ctx["error"]).lower() else "JSON"
                    msg = f"the body is not valid {what}: {ctx['error']}"
                items.append(_item(["body"], msg, kind))
                continue
            loc = ["body", *err.get("loc", ())]
            msg = str(err.get("msg", "invalid"))
            if msg.startswith("Value error, "):
                msg = msg[len("Value error, "):]
            items.append(_item(loc, msg, kind))
        if bad_json:
            raise ApiError(400, [i for i in items if i["type"] == "json_invalid"]) from None
        # our wording for the job record's fields (the same as the CLI's)
        if items and all(i["loc"][:2] == ["body", "job"] for i in items):
            try:
                wording = {tuple(loc): msg for loc, msg in problems_of(e, skip=1)}
                items = [dict(i, msg=wording.get(tuple(i["loc"][1:]), i["msg"])) for i in items]
            except Exception:  # noqa: BLE001 - keep pydantic's words
                pass
        raise ApiError(422, items) from None


def create_app(engine: Any, settings: ServiceSettings | None = None, *, corpus_hash: str = "",
               self_test: dict[str, Any] | None = None, token: str | None = None,
               store: JobStore | None = None) -> Any:
    """The ASGI application (FastAPI wrapped in the body limit) for one loaded corpus."""
    settings = settings or ServiceSettings()
    self_test = self_test or {"ok": None, "note": "not run"}
    state_dir = settings.state_dir or os.path.join(os.environ.get("TMPDIR", "/tmp"), f"rulekit-jobs-{os.getpid()}")
    jobs = store or JobStore(engine, state_dir, settings.job_ttl_s, settings.max_open_jobs)
    started = time.time()
    metrics = ServiceMetrics()
    threads = Threads()  # the requests' CPU work (`in_thread`)

    def measured(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        t0 = time.perf_counter()
        result = fn()
        metrics.observe(result, time.perf_counter() - t0)
        return result

    sweep_every = max(0.2, min(10.0, settings.job_ttl_s / 4))

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # type: ignore[no-untyped-def]
        async def sweeper() -> None:  # idle jobs are retired even when no request comes
            while True:
                await asyncio.sleep(sweep_every)
                try:
                    await run_in_threadpool(jobs.sweep)
                except Exception:  # noqa: BLE001 - logged, the next round tries again
                    log.exception("sweeping idle jobs failed")

        task = asyncio.create_task(sweeper())
        try:
            yield
        finally:
            task.cancel()
            jobs.close()

    app = FastAPI(title="rulekit Attribution Service", version=API_VERSION, lifespan=lifespan,
                  docs_url=None, redoc_url=None,  # /docs from assets we ship (service.docs): offline; no /redoc
                  description="Normalized observations in, one verdict per job out. Rules are loaded at start-up "
                              "and never uploaded. See docs/service.md.")
    from rulekit.service import docs as _docs

    _docs.install(app)

    # ---- errors ----
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        body: dict[str, Any] = {"detail": exc.items}
        if exc.error_id:
            body["error_id"] = exc.error_id
        return JSONResponse(body, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        msg = exc.detail if isinstance(exc.detail, str) else "error"
        loc = ["path"] if exc.status_code in (404, 405) else []
        return JSONResponse({"detail": [_item(loc, f"{msg}: {request.method} {request.url.path}", "http_error")]},
                            status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        error_id = uuid.uuid4().hex[:16]
        log.error("internal error %s on %s %s", error_id, request.method, request.url.path, exc_info=exc)
        return JSONResponse({"detail": [_item([], f"internal error (a bug); quote error id {error_id}",
                                              "internal_error")], "error_id": error_id}, status_code=500)

    # ---- auth ----
    def check_auth(request: Request) -> None:
        if token is None:
            return
        got = request.headers.get("authorization", "")
        scheme, _, value = got.partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(value.strip().encode(), token.encode()):
            raise ApiError(401, [_item(["header", "authorization"], "a valid `Authorization: Bearer <token>` is required",
                                       "unauthorized")], {"WWW-Authenticate": 'Bearer realm="rulekit"'})

    async def in_thread(fn: Callable[[], Any]) -> Any:
        """`fn()` (CPU work: attribution) in a worker thread, within the request deadline.
        A rule's SystemExit (or any BaseException but Ctrl-C) is an internal error (JSON
        500 with an id), never a plain-text answer or a dead worker; past the deadline the
        answer is a JSON 503 with an id and the thread is abandoned (the rule time budget
        stops a looping rule; the thread ends then)."""
        def guarded() -> Any:
            try:
                return fn()
            except (Exception, KeyboardInterrupt):
                raise
            except BaseException as e:  # noqa: BLE001 - SystemExit & co. must not end the worker
                raise RuntimeError(f"{type(e).__name__} raised during the request: {e}") from e

        try:
            async with asyncio.timeout(settings.request_timeout_s):  # (not `wait_for`: no task per request)
                return await threads.run(guarded)
        except TimeoutError:
            error_id = uuid.uuid4().hex[:16]
            log.error("request %s did not finish within %g s; its thread was abandoned", error_id,
                      settings.request_timeout_s)
            raise ApiError(503, [_item([], f"the request did not finish within {settings.request_timeout_s:g} s "
                                       f"(--request-timeout); quote error id {error_id}", "request_timeout")],
                           {"Retry-After": "30"}, error_id=error_id) from None

    async def body_of(request: Request, model: type[BaseModel]) -> Any:
        check_auth(request)
        return parse_body(model, await request.body())

    def job_call(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            try:
                jobs.maybe_sweep(sweep_every)  # idle jobs are retired by whichever request comes first
                return fn()
            except JobNotFound as e:
                raise ApiError(404, [_item(["path", "id"], f"no open job {str(e.args[0])[:80]!r} "
                                           "(never created, retired, or idle past the TTL)", "not_found")]) from None
            except JobRecordError as e:
                raise ApiError(422, [_item(["body", "job", *loc], msg, "value_error") for loc, msg in e.problems]) from None
        return run

    # ---- one shot ----
    @app.post("/v1/attribute", tags=["attribution"], responses=ERRORS, response_model=dict[str, Any],
              openapi_extra=_body_schema(AttributeRequest), summary="Attribute one job in one request")
    async def attribute(request: Request) -> Response:
        req: AttributeRequest = await body_of(request, AttributeRequest)

        def run() -> bytes:
            try:
                job = req.job.to_jobinfo()
            except JobRecordError as e:
                raise ApiError(422, [_item(["body", "job", *loc], msg, "value_error") for loc, msg in e.problems]) from None
            obs, series = req.to_inputs()
            t0 = time.perf_counter()
            with Session(engine, job, fleet=req.fleet_context()) as s:
                s.ingest_batch(obs)
                s.ingest_metrics(series)
                result = s.attribute()
            metrics.observe(result, time.perf_counter() - t0)
            return _RESULT.dump_json(_RESULT.validate_python(result), by_alias=True)

        return Response(await in_thread(run), media_type="application/json")

    # ---- the cycle ----
    @app.post("/v1/jobs", status_code=201, tags=["cycle"], response_model=JobCreated,
              responses={**ERRORS, 429: {"model": ErrorBody, "description": "too many open jobs"}},
              openapi_extra=_body_schema(CreateJob), summary="Open a job for ingest/attribute")
    async def create_job(request: Request) -> dict[str, Any]:
        req: CreateJob = await body_of(request, CreateJob)

        def run() -> dict[str, Any]:
            try:
                job_id = jobs.create(req.job)
            except StoreFull as e:
                raise ApiError(429, [_item([], str(e), "too_many_jobs")], {"Retry-After": "30"}) from None
            return {"id": job_id, "job_id": req.job.id, "expires_in_s": settings.job_ttl_s}

        return await in_thread(job_call(run))

    @app.post("/v1/jobs/{id}/observations", tags=["cycle"], response_model=Ingested, responses=JOB_ERRORS,
              openapi_extra=_body_schema(ObservationBatch), summary="Ingest observations into an open job")
    async def ingest(id: str, request: Request) -> dict[str, Any]:
        batch: ObservationBatch = await body_of(request, ObservationBatch)

        def run() -> dict[str, Any]:
            n_obs, n_series, added = jobs.ingest(id, batch)
            return {"id": id, "observations": n_obs, "metric_series": n_series, "events_added": added}

        return await in_thread(job_call(run))

    @app.post("/v1/jobs/{id}/attribute", tags=["cycle"], responses=JOB_ERRORS,
              summary="Attribute what an open job has ingested so far")
    async def attribute_job(id: str, request: Request) -> dict[str, Any]:
        check_auth(request)
        return await in_thread(job_call(lambda: measured(lambda: jobs.attribute(id))))

    @app.get("/v1/jobs/{id}", tags=["cycle"], response_model=JobStatus, responses=JOB_ERRORS)
    async def job_status(id: str, request: Request) -> dict[str, Any]:
        check_auth(request)
        return await in_thread(job_call(lambda: jobs.status(id)))

    @app.delete("/v1/jobs/{id}", tags=["cycle"], responses=JOB_ERRORS, summary="Retire an open job")
    async def retire(id: str, request: Request) -> dict[str, Any]:
        check_auth(request)
        await in_thread(job_call(lambda: jobs.retire(id)))
        return {"id": id, "retired": True}

    # ---- the corpus ----
    @app.get("/v1/health", tags=["corpus"])
    async def health() -> dict[str, Any]:
        ok = self_test.get("ok")
        return {"status": "ok" if ok in (True, None) else "degraded", "corpus_hash": corpus_hash,
                "rules": len(engine.rules), "symptoms": len(engine.registry),
                "metric_rules": len(getattr(engine, "metric_rules", ())), "self_test": self_test,
                "worker_pid": os.getpid(), "uptime_s": round(time.time() - started, 3),
                "limits": {"max_body_bytes": settings.max_body_bytes, "max_open_jobs": settings.max_open_jobs,
                           "job_ttl_s": settings.job_ttl_s}, "auth": token is not None}

    @app.get("/v1/symptoms", tags=["corpus"])
    async def symptoms(request: Request) -> list[dict[str, Any]]:
        check_auth(request)
        return [{"name": s.name, "outcome": s.outcome, "sub_domain": s.sub_domain, "rank": s.rank, "docs": s.docs,
                 "aliases": list(s.aliases), **({"blame": s.blame} if getattr(s, "blame", None) else {})}
                for s in engine.registry.all()]

    @app.get("/v1/rules", tags=["corpus"])
    async def rules(request: Request) -> list[dict[str, Any]]:
        check_auth(request)
        out = []
        for r in engine.rules:
            sp = r.span
            out.append({"name": r.name, "kind": r.kind.value, "author": r.author,
                        "file": os.path.basename(sp.file) if sp else None, "line": sp.line if sp else None,
                        "docs": r.docs})
        return out

    @app.get("/metrics", tags=["corpus"], summary="Prometheus metrics (attributions by outcome, rule fires, latency)")
    async def prometheus_metrics(request: Request) -> Response:
        check_auth(request)
        body = await in_thread(metrics.exposition)
        return Response(body, media_type=metrics.content_type)

    async def direct_attribute(scope: dict, receive: Callable, send: Callable) -> None:
        """`attribute` and the handlers FastAPI would give its errors, without FastAPI's stack."""
        request = Request(scope, receive)
        try:
            response = await attribute(request)
        except ApiError as exc:
            response = await _api_error(request, exc)
        except Exception as exc:  # as Starlette's ServerErrorMiddleware: answered, then raised for the server's log
            await (await _internal(request, exc))(scope, receive, send)
            raise
        await response(scope, receive, send)

    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    routed = _Direct(app, {("POST", "/v1/attribute"): direct_attribute})
    return SecurityHeaders(BodyLimit(routed, settings.max_body_bytes, settings.body_timeout_s, settings.body_deadline_s,
                                     settings.max_body_values), token)


class _Direct:
    """ASGI: the requests named (method, exact path; no root path) go to their own
    handler, everything else to FastAPI (`app`)."""

    def __init__(self, app: Any, routes: dict[tuple[str, str], Callable]):
        self.app = app
        self.routes = routes

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):
            handler = self.routes.get((scope["method"], scope["path"]))
            if handler is not None:
                await handler(scope, receive, send)
                return
        await self.app(scope, receive, send)


# ---- OpenAPI ------------------------------------------------------------------------

_MODELS: dict[str, type[BaseModel]] = {}


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    _MODELS[model.__name__] = model
    return {"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}}}


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document plus the request-body models (parsed by hand, so FastAPI does not see them)."""
    if app.openapi_schema:
        return app.openapi_schema
    from fastapi.openapi.utils import get_openapi

    doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    comps = doc.setdefault("components", {}).setdefault("schemas", {})
    for name, model in sorted(_MODELS.items()):
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for dname, d in schema.pop("$defs", {}).items():
            comps.setdefault(dname, d)
        comps[name] = schema
    app.openapi_schema = doc
    return doc


def openapi_document(app: Any) -> dict[str, Any]:
    """The OpenAPI document of an app made by `create_app`."""
    inner = app
    while isinstance(inner, (SecurityHeaders, BodyLimit, _Direct)):
        inner = inner.app
    return inner.openapi()
