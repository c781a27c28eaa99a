"""The Service's and the dashboard's connections have TCP_NODELAY.

Without it a response written in two pieces (headers, then body) waits for the
client's delayed ACK: every small request took 40 ms or more.  asyncio sets
TCP_NODELAY on accepted connections only when the listening socket says it is TCP
(made with `IPPROTO_TCP`); `rulekit serve`, `dashboard` and `lsp --tcp` make theirs with `rulekit.cli.listen.bind_or_exit`."""
from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from rulekit.cli.listen import bind_or_exit as _bind

sys.path.insert(0, str(Path(__file__).parent))

from test_service import served  # noqa: E402


def test_the_service_socket_is_tcp_so_asyncio_sets_nodelay_on_its_connections():
    async def main() -> int:
        sock = _bind("127.0.0.1", 0)
        got: list[int] = []

        async def handle(reader, writer) -> None:
            got.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(handle, sock=sock)
        _r, w = await asyncio.open_connection("127.0.0.1", sock.getsockname()[1])
        for _ in range(200):
            if got:
                break
            await asyncio.sleep(0.01)
        w.close()
        server.close()
        return got[0]

    assert _bind("127.0.0.1", 0).proto == socket.IPPROTO_TCP
    assert asyncio.run(main()) == 1


def _fastest_ms(get, n: int = 40) -> float:
    """The fastest of n keep-alive requests after 5 warm ones: with Nagle and delayed
    ACKs every one takes 40 ms or more (the ACK timer), however idle the machine;
    without, some are fast however loaded it is."""
    for _ in range(5):
        get()
    best = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        r = get()
        best = min(best, (time.perf_counter() - t) * 1000)
        assert r.status_code == 200
    return best


def test_small_service_requests_do_not_wait_for_delayed_acks():
    with served() as (url, _lines), httpx.Client(timeout=30) as c:
        assert _fastest_ms(lambda: c.get(f"{url}/v1/health")) < 35


def test_small_dashboard_requests_do_not_wait_for_delayed_acks(tmp_path):
    from rulekit.blueprint.store import open_db

    db = tmp_path / "bp.db"
    open_db(db).close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "rulekit", "dashboard", "--db", str(db), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if httpx.get(f"{url}/api/jobs", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        with httpx.Client(timeout=30) as c:
            assert _fastest_ms(lambda: c.get(f"{url}/api/jobs")) < 35
    finally:
        proc.terminate()
        proc.wait(30)
