"""The Prometheus connector against the real Debian `prometheus` server, its
TSDB filled with `promtool tsdb create-blocks-from openmetrics`; and the
failure paths (server down, a bad query) recorded, not raised."""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest

from rulekit.blueprint.connectors.prometheus import PrometheusMetrics
from rulekit.blueprint.metrics_shape import series_dict
from rulekit.blueprint.model import Attempt, ConnectorError

T0 = 1780282800  # 2026-06-01T03:00:00Z


def _port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    if not shutil.which("prometheus") or not shutil.which("promtool"):
        why = "Debian `prometheus` (with promtool) is not installed; .ci/run installs it"
        print(f"SKIP real Prometheus: {why}")
        pytest.skip(why)
    work = tmp_path_factory.mktemp("prom")
    lines = ["# HELP gpu_temp GPU temperature", "# TYPE gpu_temp gauge"]
    for i in range(0, 1800, 30):
        for node, base in (("node-01", 60), ("node-02", 70)):
            temp = base + (25 if node == "node-02" and i >= 700 else 0)
            lines.append(f'gpu_temp{{Hostname="{node}",gpu="0"}} {temp} {T0 + i}')
    lines.append("# EOF")
    (work / "data.om").write_text("\n".join(lines) + "\n")
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(work / "data.om"), str(work / "tsdb")],
                   check=True, capture_output=True, timeout=120)
    (work / "prometheus.yml").write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
    port = _port()
    proc = subprocess.Popen(["prometheus", f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                if urllib.request.urlopen(url + "/-/ready", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(20)


def _attempt() -> Attempt:
    return Attempt("train-0142", 0, ("node-01", "node-02"), datetime.fromtimestamp(T0, timezone.utc),
                   datetime.fromtimestamp(T0 + 1800, timezone.utc))


def test_query_range_per_node_from_a_real_server(prometheus):
    c = PrometheusMetrics(prometheus, [{"name": "gpu_temp", "promql": 'gpu_temp{Hostname="{node}"}'}], step=60,
                          before=0, after=0)
    series = [series_dict(s) for s in c.collect(_attempt())]
    by = {s["node"]: s for s in series}
    assert set(by) == {"node-01", "node-02"}
    assert by["node-02"]["labels"]["gpu"] == "0"
    vals = [v for _, v in by["node-02"]["samples"]]
    assert vals[0] == 70 and max(vals) == 95 and len(vals) >= 25
    assert all(v == 60 for _, v in by["node-01"]["samples"])


def test_bad_promql_is_a_connector_error(prometheus):
    c = PrometheusMetrics(prometheus, [{"name": "x", "promql": "gpu_temp{"}], retries=0)
    with pytest.raises(ConnectorError, match="HTTP 400"):
        c.collect(_attempt())


def test_server_down_is_a_connector_error():
    c = PrometheusMetrics(f"http://127.0.0.1:{_port()}", [{"name": "x", "promql": "up"}], retries=1, timeout=2)
    with pytest.raises(ConnectorError, match="unreachable"):
        c.collect(_attempt())


def test_metrics_through_the_blueprint(prometheus, tmp_path, bundled):
    from rulekit.blueprint.config import load_config
    from rulekit.blueprint.orchestrator import Attributor, run

    (tmp_path / "bp.toml").write_text(f'''
[[context]]
type = "static"
[[context.job]]
id = "train-0142"
state = "FAILED"
nodes = ["node-01", "node-02"]
start = 2026-06-01T03:00:00Z
end = 2026-06-01T03:30:00Z
[[metrics]]
type = "prometheus"
name = "prom"
url = "{prometheus}"
step = "1m"
before = "0s"
after = "0s"
[[metrics.query]]
name = "gpu_temp"
promql = 'max by (Hostname) (gpu_temp{{Hostname="{{node}}"}})'
''')
    out = []

    class O:
        def write(self, r): out.append(r)
        def close(self): pass

    run(load_config(tmp_path), Attributor(engine=bundled), [O()])
    r = out[0]
    cov = {c["collector"]: c for c in r["coverage"]["collectors"]}
    assert cov["prom"]["status"] == "ok" and cov["prom"]["series"] == 2
    by = {m["node"]: m for m in r["metrics"]}
    assert by["node-02"]["max"] == 95 and by["node-01"]["max"] == 60
    assert r["coverage"]["complete"] is True
