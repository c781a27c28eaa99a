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


def _serve(db):
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


@pytest.fixture(scope="module")
def server(db):
    yield from _serve(db)


@pytest.fixture(scope="module")
def timed_server(db, tmp_path_factory):
    """A store with train-0142 as the timestamp work will give it: application-log evidence with times
    (five NCCL rows on node-01 in one second), scheduler rows still without."""
    import json as _json
    import sqlite3

    from rulekit.blueprint.store import open_db, upsert

    r = _json.loads(sqlite3.connect(db).execute("SELECT result_json FROM results WHERE key='train-0142#0'").fetchone()[0])
    r["job_id"], r["key"] = "train-0142-timed", "train-0142-timed#0"
    ev = r["verdict"]["evidence"]
    k = 0
    for e in ev:
        if e["timestamp"] is None and str(e["source"]).startswith("applog"):
            e["timestamp"] = "2026-06-01T03:22:41" if k < 5 else f"2026-06-01T03:2{3 + k % 5}:0{k % 10}"
            if k < 5:
                e["node"] = "node-01"
            k += 1
    extra = dict(ev[-1], timestamp=None, source="scheduler", line_num=None, symptom="SLURM_JOB_END", node=None)
    ev.append(extra)
    path = tmp_path_factory.mktemp("timed") / "timed.db"
    con = open_db(path)
    upsert(con, r)
    con.close()
    yield from _serve(path)


def _browser():
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (.ci/run installs Debian's chromium)")
    return playwright


def _launch(p):
    return p.chromium.launch(executable_path=CHROMIUM, args=[
        "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"])


def _shot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000, path
    return path


def test_the_dashboard_in_a_real_browser(server):
    playwright = _browser()
    with playwright.sync_playwright() as p:
        browser = _launch(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(server + "/jobs")
            _shot(page, "dashboard-jobs.png")
            page.select_option("select[name=outcome]", "hardware")
            page.click("button[type=submit]")
            rows = page.locator("table.jobs tr")
            assert rows.count() == 3  # header + the two hardware jobs
            assert "node-02" in rows.nth(1).inner_text()
            page.click("text=train-0142")
            body = page.locator("main").inner_text()
            assert "HARDWARE" in page.locator(".diagnosis").inner_text().upper()
            assert "nvlink" in page.locator(".diagnosis").inner_text()
            # next to the root cause: its action and the command to paste
            root = page.locator("div.root")
            assert "XID-149-NVLINK_SIGNAL_INTEGRITY" in root.inner_text() and "drain_and_reset" in root.inner_text()
            assert root.locator("pre.command").inner_text() == (
                'scontrol update nodename=node-02 state=drain '
                'reason="rulekit: XID-149-NVLINK_SIGNAL_INTEGRITY in job train-0142: drain_and_reset"')
            bad = page.locator("table.bad-nodes").inner_text()
            assert "node-02" in bad and "XID-149-NVLINK_SIGNAL_INTEGRITY" in bad
            ev = page.locator("table.evidence")
            assert "syslog/node-02.log:3" in ev.inner_text() and "NETIR_LINK_EVT" in ev.inner_text()
            # why each demoted symptom was demoted
            nccl = ev.locator("tr", has_text="NCCL_IB_RETRY_EXCEEDED").first.inner_text()
            assert "demoted by Xid149AndNvlinkFiltering: consequence of XID-149-NVLINK_SIGNAL_INTEGRITY" in nccl
            assert "NCCL_IB_RETRY_EXCEEDED" in body
            svg = page.locator("svg.timeline")
            assert svg.is_visible()
            box = svg.bounding_box()
            assert box and box["width"] > 500 and box["height"] > 100
            assert "root cause" in svg.text_content() and "blames the node" in svg.text_content()  # the legend
            marker = page.locator("svg.timeline g.ev[data-symptom='XID-149-NVLINK_SIGNAL_INTEGRITY'] circle").last
            assert marker.count() == 1
            assert marker.locator("xpath=..").get_attribute("data-node") == "node-02"
            # placed at its time (03:12:40 of a 03:00-03:31 job), not in the "no time" column
            assert 0.3 < (float(marker.get_attribute("cx")) - 140) / (1000 - 140 - 96 - 20) < 0.5
            assert "local-files" in page.locator("table.coverage").inner_text()
            _shot(page, "dashboard-job.png")
            svg.screenshot(path=str(ARTIFACTS / "dashboard-timeline.png"))
            # the raw lines around the root cause's evidence, from the store
            page.locator("div.root a.ctx").click()
            assert "/context?" in page.url
            hit = page.locator("table.lines tr.hit").inner_text()
            assert "NETIR_LINK_EVT" in hit and hit.startswith("3")
            assert page.locator("table.lines tr").count() >= 5
            assert "HandleXidBurstEvents" in page.locator("table.line-evidence").inner_text()
            _shot(page, "dashboard-context.png")
            page.go_back()
            # a node name leads to the fleet page of that node
            page.locator("table.bad-nodes a", has_text="node-02").click()
            assert page.url.endswith("/fleet/node/node-02")
            assert "2 distinct job(s)" in page.locator("main").inner_text()
            _shot(page, "dashboard-node.png")
            page.goto(server + "/fleet")
            fleet = page.locator("table.fleet tr").nth(1).inner_text()
            assert "node-02" in fleet and "2" in fleet.split()
            _shot(page, "dashboard-fleet.png")
        finally:
            browser.close()


def test_evidence_with_times_in_a_real_browser(timed_server):
    """Evidence with and without times (the fixture gives the application log's rows times,
    five of them in one second on one node): time order, the untimed rows after, and no
    marker hidden under another on the timeline."""
    playwright = _browser()
    with playwright.sync_playwright() as p:
        browser = _launch(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(timed_server + "/jobs/train-0142-timed%230")
            times = [t.strip() for t in page.locator("table.evidence tr.ev td:first-child").all_inner_texts()]
            timed = [t for t in times if t != "no time"]
            assert len(timed) >= 8 and timed == sorted(timed)
            assert times[:len(timed)] == timed and set(times[len(timed):]) <= {"no time"}  # untimed rows last
            assert "row(s) whose line carries no time stamp follow" in page.locator("main").inner_text()
            # the five at 03:22:41 on node-01: not stacked invisibly
            circles = page.locator("svg.timeline g.ev > circle:not([fill=none])")
            spots = [(c.get_attribute("cx"), c.get_attribute("cy")) for c in circles.all()]
            assert len(spots) == len(set(spots)), "two markers drawn at one spot"
            counted = page.locator("svg.timeline g.ev[data-count]:not([data-count='1'])")
            assert counted.count() >= 1 and "×" in counted.first.text_content()
            total = sum(int(g.get_attribute("data-count")) for g in page.locator("svg.timeline g.ev").all())
            shown = len(page.locator("table.evidence tr.ev").all())
            assert total == shown  # every piece of evidence is on the timeline, counted or drawn
            _shot(page, "dashboard-job-timed.png")
            page.locator("svg.timeline").screenshot(path=str(ARTIFACTS / "dashboard-timeline-timed.png"))
        finally:
            browser.close()


def test_context_lines_come_only_from_the_store(client):
    ok = client.get("/api/jobs/train-0142%230/context", params={"source": "syslog/node-02.log", "line": 3})
    assert ok.status_code == 200 and ok.json()["line_num"] == 3 and len(ok.json()["lines"]) >= 5
    for bad in ({"source": "../../../../etc/passwd", "line": 1}, {"source": "/etc/passwd", "line": 1},
                {"source": "syslog/node-02.log", "line": 999}):
        r = client.get("/jobs/train-0142%230/context", params=bad)
        assert r.status_code == 404 and "root:" not in r.text
    assert client.get("/jobs/train-0142%230/context", params={"source": "x", "line": "y"}).status_code == 400


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
