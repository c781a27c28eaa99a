"""Rules judged by production in the dashboard: the rules page and its JSON (the numbers
of `rulekit rules stats`), verdict feedback posted over HTTP (validation naming the
field, auth, the same table as the CLI), and the page in a real browser (Playwright
driving Debian's Chromium against `rulekit dashboard`), feedback posted to the running
server changing the precision a person sees."""
from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_blueprint_dashboard import _browser, _launch, _serve, _shot  # noqa: E402

from rulekit.blueprint.config import load_config  # noqa: E402
from rulekit.blueprint.connectors.sqlite import SqliteOutput  # noqa: E402
from rulekit.blueprint.orchestrator import Attributor, run  # noqa: E402
from rulekit.blueprint.rulestats import feedback_of, record_feedback, rule_stats  # noqa: E402
from rulekit.blueprint.store import open_db  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
STATIC = REPO / "examples" / "blueprint" / "static"


def _store(path: Path, bundled) -> Path:
    out = SqliteOutput(path)
    run(load_config(STATIC), Attributor(engine=bundled), [out])
    out.close()
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory, bundled):
    return _store(tmp_path_factory.mktemp("rules") / "bp.db", bundled)


@pytest.fixture
def db(built, tmp_path):
    path = tmp_path / "bp.db"
    src, dst = sqlite3.connect(built), sqlite3.connect(path)
    src.backup(dst)
    src.close()
    dst.close()
    return path


def _call(app, method: str, url: str, client=("127.0.0.1", 50000), **kw):
    async def go():
        transport = httpx.ASGITransport(app=app, client=client)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            return await c.request(method, url, **kw)

    return asyncio.run(go())


def test_the_rules_api_has_the_numbers_of_rules_stats(db):
    from rulekit.blueprint.dashboard.app import create_app

    con = open_db(db)
    record_feedback(con, "train-0142#0", "confirmed", "alice")
    record_feedback(con, "train-0155#0", "wrong", "bob", outcome="network")
    con.close()
    app = create_app(db)
    got = _call(app, "GET", "/api/rules").json()
    p = subprocess.run([sys.executable, "-m", "rulekit", "rules", "stats", "--db", str(db), "--format", "json"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert got == json.loads(p.stdout)
    x = next(r for r in got["rules"] if r["rule"] == "HandleXidBurstEvents")
    assert (x["fired"], x["root"], x["confirmed"], x["wrong"], x["precision"]) == (2, 2, 1, 1, 0.5)
    # the window: only the attempts ending after June 2nd
    later = _call(app, "GET", "/api/rules", params={"since": "2026-06-02T00:00:00Z"}).json()
    con = sqlite3.connect(db)
    assert later == rule_stats(con, since=1780358400.0) and later["attempts"] < got["attempts"]
    page = _call(app, "GET", "/rules")
    assert page.status_code == 200 and "HandleXidBurstEvents" in page.text and "50%" in page.text
    assert "href='/rules'" in _call(app, "GET", "/jobs").text  # in the navigation
    assert _call(app, "GET", "/rules", params={"since": "someday"}).status_code == 400


def test_feedback_over_http_is_validated_and_stored_like_the_cli(db):
    from rulekit.blueprint.dashboard.app import create_app

    app = create_app(db)
    url = "/api/jobs/train-0150%230/feedback"
    ok = _call(app, "POST", url, json={"verdict": "wrong", "outcome": "infrastructure", "symptom": "FM_NOT_RUNNING",
                                       "nodes": ["node0004"], "who": "bob", "note": "fabric manager was down"})
    assert ok.status_code == 201, ok.text
    row = ok.json()
    assert (row["who"], row["judged_rule"], row["nodes"]) == ("bob", "Mlx5LinkDown", ["node0004"]) and row["at"]
    con = sqlite3.connect(db)
    assert feedback_of(con, "train-0150#0")[0]["note"] == "fabric manager was down"  # the CLI's table
    bad = [({"verdict": "wrong", "who": "x", "outcome": "cosmic"}, 422, ["body", "outcome"]),
           ({"verdict": "maybe", "who": "x"}, 422, ["body", "verdict"]),
           ({"verdict": "wrong"}, 422, ["body", "who"]),
           ({"verdict": "wrong", "who": "x", "nodes": "node0004"}, 422, ["body", "nodes"]),
           ({"verdict": "wrong", "who": "x", "colour": "red"}, 422, ["body", "colour"]),
           ({"verdict": "confirmed", "who": "x", "outcome": "network"}, 422, ["body", "outcome/symptom/nodes"])]
    for body, status, loc in bad:
        r = _call(app, "POST", url, json=body)
        assert r.status_code == status and r.json()["detail"][0]["loc"] == loc, (body, r.text)
    r = _call(app, "POST", "/api/jobs/nope%230/feedback", json={"verdict": "wrong", "who": "x"})
    assert r.status_code == 404 and "no attempt" in r.json()["error"]
    r = _call(app, "POST", url, content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not JSON" in r.json()["error"]
    r = _call(app, "POST", url, content=b'{"verdict": "wrong", "who": "x"}', headers={"content-type": "text/plain"})
    assert r.status_code == 415
    r = _call(app, "POST", url, json={"verdict": "wrong", "who": "x", "note": "x" * 70000})
    assert r.status_code == 413
    r = _call(app, "POST", url, json={"verdict": "confirmed", "who": "eve"}, client=("10.1.2.3", 4000))
    assert r.status_code == 403 and "RULEKIT_DASHBOARD_TOKEN" in r.json()["error"]
    assert len(feedback_of(con, "train-0150#0")) == 1  # nothing refused was written
    # with a token: from anywhere, with the token only
    app = create_app(db, token="s3cret")
    r = _call(app, "POST", url, json={"verdict": "confirmed", "who": "eve"})
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    r = _call(app, "POST", url, json={"verdict": "confirmed", "who": "eve"}, client=("10.1.2.3", 4000),
              headers={"authorization": "Bearer s3cret"})
    assert r.status_code == 201
    assert [f["who"] for f in feedback_of(con, "train-0150#0")] == ["bob", "eve"]
    assert _call(app, "GET", "/api/rules").status_code == 200  # reading needs no token, as before


def test_the_rules_page_in_a_real_browser(db):
    playwright = _browser()
    for url in _serve(db):
        with playwright.sync_playwright() as p:
            browser = _launch(p)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(url + "/jobs")
                page.click("header a:has-text('Rules')")
                assert page.url.endswith("/rules")
                assert "4 attempt(s) in the window" in page.locator("p.summary").inner_text()
                row = page.locator("table.rules tr[data-rule='HandleXidBurstEvents']")
                cells = row.locator("td").all_inner_texts()
                assert cells[1:6] == ["2", "2", "0", "0", "—"]
                assert "XID-149-NVLINK_SIGNAL_INTEGRITY" in cells[6]
                # an operator confirms one verdict and calls the other wrong, over HTTP
                for key, body in (("train-0142%230", {"verdict": "confirmed", "who": "alice"}),
                                  ("train-0155%230", {"verdict": "wrong", "who": "bob", "outcome": "network"})):
                    req = urllib.request.Request(f"{url}/api/jobs/{key}/feedback", data=json.dumps(body).encode(),
                                                 headers={"Content-Type": "application/json"}, method="POST")
                    with urllib.request.urlopen(req, timeout=10) as r:
                        assert r.status == 201
                page.reload()
                cells = row.locator("td").all_inner_texts()
                assert cells[3:6] == ["1", "1", "50%"]
                _shot(page, "dashboard-rules.png")
                # a window with only the later attempts
                page.fill("input[name=since]", "2026-06-02T00:00:00Z")
                page.click("button[type=submit]")
                assert "since=2026-06-02" in page.url
                summary = page.locator("p.summary").inner_text()
                assert summary.startswith("3 attempt(s)"), summary  # train-0142 ended on June 1st
                assert row.locator("td").all_inner_texts()[1:3] == ["1", "1"]
            finally:
                browser.close()
