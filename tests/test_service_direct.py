"""`POST /v1/attribute` skips FastAPI's routing and middleware stack (`service.app._Direct`):
its answers must be byte for byte the ones FastAPI gives for the same endpoint: the
result, every error (400, 422, 401, 500 with its id), and the headers."""
from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from rulekit.service.app import _Direct, create_app
from rulekit.service.limits import BodyLimit
from rulekit.service.security import SecurityHeaders
from rulekit.service.settings import ServiceSettings

XID79 = "[ 5120.118843] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
JOB = {"id": "j1", "state": "FAILED", "nodes": ["n1", "n2"], "tasks_per_node": 8}
GOOD = json.dumps({"job": JOB, "observations": [{"source": "syslog", "node": "n2", "lines": [XID79]}]}).encode()


def _pair(engine, tmp_path, token=None):
    """(the app as served, the same app with every route through FastAPI)."""
    settings = ServiceSettings(state_dir=str(tmp_path / "state"))
    served = create_app(engine, settings, token=token)
    direct = served.app.app
    assert isinstance(direct, _Direct)
    plain = SecurityHeaders(BodyLimit(direct.app, settings.max_body_bytes, settings.body_timeout_s,
                                      settings.body_deadline_s, settings.max_body_values), token)
    return served, plain


def _post(app, body: bytes, headers: dict | None = None) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return await c.post("/v1/attribute", content=body,
                                headers={"content-type": "application/json", **(headers or {})})
    return asyncio.run(go())


def _same(a: httpx.Response, b: httpx.Response) -> None:
    assert a.status_code == b.status_code
    assert sorted(a.headers.multi_items()) == sorted(b.headers.multi_items())
    assert a.content == b.content


CASES = {
    "result": GOOD,
    "not json": b"{not json",
    "empty": b"",
    "bad field": json.dumps({"job": {**JOB, "nodes": "n1"}, "observations": []}).encode(),
    "job record": json.dumps({"job": {**JOB, "tasks_per_node": -3}, "observations": []}).encode(),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_direct_answers_are_fastapis(bundled, tmp_path, case):
    served, plain = _pair(bundled, tmp_path)
    a, b = _post(served, CASES[case]), _post(plain, CASES[case])
    _same(a, b)
    if case == "result":
        assert a.status_code == 200 and a.json()["outcome"] == "hardware"
        assert a.headers["x-content-type-options"] == "nosniff" and "content-security-policy" in a.headers
    else:
        assert a.status_code in (400, 422) and a.json()["detail"]


def test_direct_auth_is_fastapis(bundled, tmp_path):
    served, plain = _pair(bundled, tmp_path, token="s3cret")
    _same(_post(served, GOOD), _post(plain, GOOD))
    assert _post(served, GOOD).status_code == 401
    ok = {"authorization": "Bearer s3cret"}
    _same(_post(served, GOOD, ok), _post(plain, GOOD, ok))
    assert _post(served, GOOD, ok).status_code == 200


def test_direct_internal_error_is_fastapis(bundled, tmp_path, monkeypatch, caplog):
    """A bug in attribution: a JSON 500 with an error id the log repeats (ids differ per call)."""
    from rulekit.engine import session

    def broken(self, with_trace=False):
        raise RuntimeError("boom")

    monkeypatch.setattr(session.Session, "attribute", broken)
    served, plain = _pair(bundled, tmp_path)
    a, b = _post(served, GOOD), _post(plain, GOOD)
    assert a.status_code == b.status_code == 500
    ida, idb = a.json()["error_id"], b.json()["error_id"]
    assert a.content.replace(ida.encode(), b"ID") == b.content.replace(idb.encode(), b"ID")
    assert ida in caplog.text and idb in caplog.text


def test_other_routes_still_go_through_fastapi(bundled, tmp_path):
    served, _ = _pair(bundled, tmp_path)

    async def go() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=served, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return [await c.get("/v1/attribute"), await c.post("/v1/attribute/", content=GOOD),
                    await c.get("/v1/health")]
    wrong_method, slash, health = asyncio.run(go())
    assert wrong_method.status_code == 405 and wrong_method.json()["detail"][0]["type"] == "http_error"
    assert slash.status_code in (307, 404)
    assert health.status_code == 200 and health.json()["rules"] == len(bundled.rules)
