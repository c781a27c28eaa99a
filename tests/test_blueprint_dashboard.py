"""The dashboard over a store the quickstart wrote: the JSON API through the
ASGI app, and the pages in a real browser (Playwright driving Debian's
Chromium against `rulekit dashboard` running under uvicorn), asserting what a
person sees; the screenshot is kept under tests/artifacts/."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from rulekit.blueprint.config import load_config
from rulekit.blueprint.connectors.sqlite import SqliteOutput
from rulekit.blueprint.orchestrator import Attributor, run


class AppClient:
    """GET requests to the dashboard app itself, through httpx's ASGI transport (what
    starlette's TestClient does; its httpx path is deprecated for `httpx2`)."""

    def __init__(self, app):
        self.app = app

    def get(self, url: str, **kw):
        import asyncio

        import httpx

        async def go():
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://testserver") as c:
                return await c.get(url, **kw)

        return asyncio.run(go())

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "tests" / "artifacts"
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def db(tmp_path_factory, bundled):
    path = tmp_path_factory.mktemp("dash") / "bp.db"
    out = SqliteOutput(path)
    run(load_config(REPO / "examples" / "blueprint" / "static"), Attributor(engine=bundled), [out])
    out.close()
    return path


@pytest.fixture(scope="module")
def client(db):
    from rulekit.blueprint.dashboard.app import create_app

    return AppClient(create_app(db))


def test_json_api_has_the_same_numbers(client):
    jobs = client.get("/api/jobs", params={"outcome": "hardware"}).json()
    assert [j["job_id"] for j in jobs["jobs"]] == ["train-0155", "train-0142"]
    assert client.get("/api/jobs", params={"node": "node0004"}).json()["count"] == 1
    assert client.get("/api/jobs", params={"sub_domain": "scheduler"}).json()["jobs"][0]["job_id"] == "train-0151"
    assert client.get("/api/jobs", params={"until": "2026-06-02T00:00:00Z"}).json()["count"] == 1
    fleet = client.get("/api/fleet", params={"kind": "node"}).json()["ranking"]
    assert (fleet[0]["name"], fleet[0]["jobs"]) == ("node-02", 2)
    windowed = client.get("/api/fleet", params={"since": "2026-06-02T00:00:00Z"}).json()["ranking"]
    assert {r["name"]: r["jobs"] for r in windowed} == {"node-02": 1, "node0004": 1}
    hca = client.get("/api/fleet", params={"kind": "hca_port"}).json()["ranking"]
    assert hca[0]["name"] == "node0004/mlx5@0000:0c:00.0" and "IB_LINK_DOWN" in hca[0]["symptoms"]
    drill = client.get("/api/fleet/node/node-02").json()
    assert drill["distinct_jobs"] == 2
    one = client.get("/api/jobs/train-0142%230").json()
    assert one["verdict"]["bad_nodes"][0]["node"] == "node-02"


def test_bad_requests_are_answered(client):
    r = client.get("/jobs", params={"since": "last tuesday"})
    assert r.status_code == 400 and "since" in r.text
    assert client.get("/api/fleet", params={"kind": "rack"}).status_code == 400
    assert client.get("/api/jobs/nope%230").status_code == 404
    assert client.get("/no/such/page").status_code == 404


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def server(db):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "rulekit", "dashboard", "--db", str(db), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/api/facets", timeout=1).read()
                break
            except OSError:
                if proc.poll() is not None:
                    raise AssertionError(proc.stdout.read().decode())
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_dashboard_in_a_real_browser(server):
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (.ci/run installs Debian's chromium)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(server + "/jobs")
            page.select_option("select[name=outcome]", "hardware")
            page.click("button[type=submit]")
            rows = page.locator("table.jobs tr")
            assert rows.count() == 3  # header + the two hardware jobs
            assert "node-02" in rows.nth(1).inner_text()
            page.click("text=train-0142")
            body = page.locator("main").inner_text()
            assert "HARDWARE" in page.locator(".diagnosis").inner_text().upper()
            assert "nvlink" in page.locator(".diagnosis").inner_text()
            bad = page.locator("table.bad-nodes").inner_text()
            assert "node-02" in bad and "XID-149-NVLINK_SIGNAL_INTEGRITY" in bad
            ev = page.locator("table.evidence").inner_text()
            assert "syslog/node-02.log:3" in ev and "NETIR_LINK_EVT" in ev
            assert "NCCL_IB_RETRY_EXCEEDED" in body
            svg = page.locator("svg.timeline")
            assert svg.is_visible()
            box = svg.bounding_box()
            assert box and box["width"] > 500 and box["height"] > 100
            marker = page.locator("svg.timeline circle[data-symptom='XID-149-NVLINK_SIGNAL_INTEGRITY']")
            assert marker.count() >= 1 and marker.first.get_attribute("data-node") == "node-02"
            # placed at its time (03:12:40 of a 03:00-03:31 job), not in the "no time" column
            assert 0.3 < (float(marker.first.get_attribute("cx")) - 130) / (900 - 130 - 90) < 0.5
            assert "local-files" in page.locator("table.coverage").inner_text()
            page.screenshot(path=str(ARTIFACTS / "dashboard-job.png"), full_page=True)
            page.goto(server + "/fleet")
            fleet = page.locator("table.fleet tr").nth(1).inner_text()
            assert "node-02" in fleet and "2" in fleet.split()
            page.click("table.fleet >> text=node-02")
            assert "2 distinct job(s)" in page.locator("main").inner_text()
            page.screenshot(path=str(ARTIFACTS / "dashboard-fleet.png"), full_page=True)
        finally:
            browser.close()
    assert (ARTIFACTS / "dashboard-job.png").stat().st_size > 10_000


def test_incomplete_evidence_is_shown(tmp_path, db):
    import json as _json
    import sqlite3

    from rulekit.blueprint.dashboard.app import create_app
    from rulekit.blueprint.store import open_db, upsert

    src = sqlite3.connect(db).execute("SELECT result_json FROM results WHERE key='train-0142#0'").fetchone()[0]
    r = _json.loads(src)
    r["coverage"]["complete"] = False
    r["coverage"]["collectors"].append({"collector": "loki-eu", "kind": "logs", "type": "loki", "status": "failed",
                                        "observations": 0, "lines": 0, "series": 0, "seconds": 30.0,
                                        "error": "HTTP 503 from http://loki: unavailable", "details": []})
    con = open_db(tmp_path / "x.db")
    upsert(con, r)
    con.close()
    page = AppClient(create_app(tmp_path / "x.db")).get("/jobs/train-0142%230").text
    assert "Evidence incomplete" in page and "loki-eu" in page and "HTTP 503" in page
    listing = AppClient(create_app(tmp_path / "x.db")).get("/jobs").text
    assert "incomplete" in listing


def test_cli_errors_without_traceback(tmp_path):
    p = subprocess.run([sys.executable, "-m", "rulekit", "dashboard", "--db", str(tmp_path / "none.db")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "no such database" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "rulekit", "blueprint", "run", "--configs",
                        str(REPO / "examples" / "blueprint" / "static"), "--since", "last tuesday"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "not a time: 'last tuesday'" in p.stderr
    assert "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "rulekit", "blueprint", "run", "--configs",
                        str(REPO / "examples" / "blueprint" / "static"), "--output", "kafka:x"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "unknown output" in p.stderr
