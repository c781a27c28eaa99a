"""The Service's `/docs` (Swagger UI) renders in a real browser with the
network closed: every request that does not go to the Service itself is refused,
and none is even tried (the assets are shipped, not fetched from a CDN)."""
from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "tests" / "artifacts"
CHROMIUM = "/usr/bin/chromium"
TEAM_RULES = REPO / "tests" / "fixtures" / "team_repo" / "rules"


SERVING: list[str] = []  # the line `rulekit serve` printed


@pytest.fixture(scope="module")
def service():
    proc = subprocess.Popen([sys.executable, "-m", "rulekit", "serve", "--port", "0", "--no-bundled", "--rules",
                             str(TEAM_RULES), "--no-access-log"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO)
    try:
        url = None
        deadline = time.monotonic() + 120
        while url is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                raise AssertionError(f"the Service ended ({proc.wait(10)})")
            if line.startswith("rulekit serving"):
                SERVING.append(line.strip())
                url = line.split(" on ", 1)[1].split(" with ", 1)[0]
        assert url
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/v1/health", timeout=5).read()
                break
            except OSError:
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def test_assets_are_served_by_name_only(service):
    ok = urllib.request.urlopen(service + "/docs/assets/swagger-ui-bundle.js", timeout=10)
    assert ok.status == 200 and len(ok.read()) > 100_000
    page = urllib.request.urlopen(service + "/docs", timeout=10).read().decode()
    assert "/docs/assets/swagger-ui-bundle.js" in page and "cdn" not in page.lower()
    for bad in ("../app.py", "..%2F..%2Fetc%2Fpasswd", "core.py", "redoc.standalone.js"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(service + "/docs/assets/" + bad, timeout=10)
        assert e.value.code == 404


@pytest.mark.parametrize("path, ready, shot", [("/docs", ".swagger-ui .info .title", "service-docs.png")])
def test_api_pages_render_with_the_network_closed(service, path, ready, shot):
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (.ci/run installs Debian's chromium)")
    refused: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})

            def gate(route):
                if route.request.url.startswith(service):
                    route.continue_()
                else:  # the network is closed: only the Service itself answers
                    refused.append(route.request.url)
                    route.abort()

            context.route("**/*", gate)
            page = context.new_page()
            page.goto(service + path)
            page.wait_for_selector(ready, timeout=30_000)
            text = page.locator("body").inner_text()
            assert "rulekit Attribution Service" in text
            assert "/v1/attribute" in text
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / shot), full_page=False)
        finally:
            browser.close()
    assert refused == [], f"the page tried the network: {refused}"
    assert (ARTIFACTS / shot).stat().st_size > 10_000


def test_the_documented_start_line_is_the_one_printed(service):
    """docs/service.md shows the start line with placeholders, not a past run's counts."""
    import re

    doc = (REPO / "docs" / "service.md").read_text("utf-8")
    (shown,) = re.findall(r"`(rulekit serving [^`]*)`", doc)
    pattern = re.escape(shown)
    for word, rx in (("N", r"\d+"), ("HASH", r"[0-9a-f]{12}"), ("P/T", r"\d+/\d+")):
        pattern = pattern.replace(re.escape(word), rx, 1)
    pattern = pattern.replace(re.escape("http://127.0.0.1:8000"), r"http://127\.0\.0\.1:\d+")
    assert re.fullmatch(pattern, SERVING[0]), (shown, SERVING[0])
    assert not re.search(r"serving \d+ rules", doc), "docs/service.md quotes a count"
