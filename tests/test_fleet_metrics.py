"""`/metrics` scraped by the real Prometheus (Debian's `prometheus`, started on a free
port with a scrape config): the dashboard's store-derived metrics (attempts by outcome,
rule fires, latency, node states, the breaker) and the Service's (attributions by outcome,
rule fires, latency), the latter with two worker processes summed through
prometheus_client's multiprocess mode."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_blueprint_fleet import HISTORY, run_store, write_config  # noqa: E402
from test_blueprint_prometheus import _port  # noqa: E402
from test_service import PAYLOAD, _start, _stop  # noqa: E402


class Prometheus:
    def __init__(self, work: Path, targets: dict[str, str]):
        if not shutil.which("prometheus"):
            why = "Debian `prometheus` is not installed; .ci/run installs it"
            print(f"SKIP real Prometheus: {why}")
            pytest.skip(why)
        jobs = "".join(f"  - job_name: {name}\n    scrape_interval: 1s\n    static_configs:\n"
                       f"      - targets: ['{hostport}']\n" for name, hostport in targets.items())
        (work / "prometheus.yml").write_text(f"global:\n  scrape_interval: 1s\nscrape_configs:\n{jobs}")
        self.url = f"http://127.0.0.1:{_port()}"
        self.proc = subprocess.Popen(["prometheus", f"--config.file={work / 'prometheus.yml'}",
                                      f"--storage.tsdb.path={work / 'tsdb'}",
                                      f"--web.listen-address={self.url[len('http://'):]}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(150):
            try:
                if urllib.request.urlopen(self.url + "/-/ready", timeout=1).status == 200:
                    return
            except OSError:
                time.sleep(0.2)
        raise AssertionError("Prometheus did not become ready")

    def query(self, promql: str) -> dict[tuple, float]:
        url = self.url + "/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        data = json.loads(urllib.request.urlopen(url, timeout=10).read())
        assert data["status"] == "success", data
        return {tuple(sorted((k, v) for k, v in r["metric"].items() if k not in ("instance", "job", "__name__"))): float(r["value"][1])
                for r in data["data"]["result"]}

    def wait(self, promql: str, ok, timeout: float = 60.0) -> dict[tuple, float]:
        end = time.time() + timeout
        got: dict = {}
        while time.time() < end:
            got = self.query(promql)
            if got and ok(got):
                return got
            time.sleep(0.5)
        raise AssertionError(f"{promql}: {got}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(20)


def test_prometheus_scrapes_the_dashboard(tmp_path, bundled):
    import uvicorn

    from rulekit.blueprint.dashboard.app import create_app

    # the history of test_blueprint_fleet, ending a day ago: node-07 is cleared now, node-03 healthy
    t0 = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=9)
    folder = write_config(tmp_path / "cfg", HISTORY, t0=t0)
    db = tmp_path / "results.db"
    verdicts = run_store(folder, bundled, db)
    port = _port()
    server = uvicorn.Server(uvicorn.Config(create_app(db), host="127.0.0.1", port=port, log_level="warning"))
    th = threading.Thread(target=server.run, daemon=True)
    th.start()
    for _ in range(100):
        if server.started:
            break
        time.sleep(0.05)
    prom = Prometheus(tmp_path, {"dashboard": f"127.0.0.1:{port}"})
    try:
        got = prom.wait("rulekit_attempts_total", lambda g: len(g) >= 3)
        by_outcome = {dict(k)["outcome"]: v for k, v in got.items()}
        want: dict[str, int] = {}
        for v in verdicts.values():
            want[v["outcome"]] = want.get(v["outcome"], 0) + 1
        assert by_outcome == want == {"application": 4, "hardware": 2, "success": 3}
        fires = {dict(k)["rule"]: v for k, v in prom.query("rulekit_rule_fires_total").items()}
        assert fires["FleetHistoryImplicatesNode"] == 2 and fires["Segfault.Kernel"] == 6
        states = {dict(k)["node"]: dict(k)["state"] for k, v in prom.query("rulekit_fleet_node_state").items() if v == 1}
        assert states == {"node-03": "healthy", "node-07": "cleared"}
        nodes = {dict(k)["state"]: v for k, v in prom.query("rulekit_fleet_nodes").items()}
        assert nodes == {"healthy": 1, "cleared": 1, "suspect": 0, "quarantine": 0}
        assert prom.query("rulekit_attribution_duration_seconds_count")[()] == len(HISTORY)
        assert prom.query("rulekit_fleet_circuit_breaker_tripped")[()] == 0
        assert prom.query("rulekit_store_up")[()] == 1
        assert prom.query('up{job="dashboard"}')[()] == 1
        # the page shows the same states
        page = httpx.get(f"http://127.0.0.1:{port}/fleet", timeout=10).text
        assert "Node states" in page and "node-07" in page and "cleared" in page
        api = httpx.get(f"http://127.0.0.1:{port}/api/fleet/states", timeout=10).json()
        assert {n["node"]: n["state"] for n in api["nodes"]} == {"node-07": "cleared", "node-03": "healthy"}
    finally:
        prom.stop()
        server.should_exit = True
        th.join(10)


def test_prometheus_scrapes_the_service_summed_over_two_workers(tmp_path):
    state = tmp_path / "state"
    proc, url, _ = _start(["--workers", "2", "--state-dir", str(state)])
    try:
        pids = set()
        n = 0
        deadline = time.time() + 120
        while (len(pids) < 2 or n < 6) and time.time() < deadline:  # fresh connections land on either worker
            r = httpx.post(f"{url}/v1/attribute", json=PAYLOAD, timeout=60, headers={"connection": "close"})
            assert r.status_code == 200 and r.json()["outcome"] == "hardware"
            n += 1
            pids = {p.stem.split("_")[-1] for p in (state / "prometheus").glob("counter_*.db")}
        assert len(pids) == 2, "both workers should have attributed"
        prom = Prometheus(tmp_path, {"service": url[len("http://"):]})
        try:
            got = prom.wait("rulekit_attributions_total", lambda g: sum(g.values()) == n)
            assert got == {(("outcome", "hardware"),): n}
            assert prom.query("rulekit_attribution_duration_seconds_count")[()] == n
            fires = {dict(k)["rule"]: v for k, v in prom.query("rulekit_rule_fires_total").items()}
            assert fires["XidCatalog[79]"] == n
        finally:
            prom.stop()
        body = httpx.get(f"{url}/metrics", timeout=10).text
        assert f'rulekit_attributions_total{{outcome="hardware"}} {float(n)}' in body
    finally:
        _stop(proc)
