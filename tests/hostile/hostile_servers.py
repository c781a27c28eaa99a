"""Servers that misbehave, on 127.0.0.1 with a free port, each connection in a thread:
`hung` accepts and never answers, `drip` answers one byte a second forever,
`huge(n)` answers a 200 with an `n`-byte JSON body streamed (never held), and
`RawServer` runs any such behaviour.  Also `peak_rss_mb`: a command's peak RSS,
measured by a fresh parent process whose only child it is."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from typing import Callable


class RawServer:
    def __init__(self, behave: Callable[[socket.socket], None]):
        self.behave = behave
        self.conns: list[socket.socket] = []
        self.accepted = 0
        self.stop = threading.Event()

    def __enter__(self) -> "RawServer":
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            _read_request(conn)
            self.behave(conn)
        except OSError:
            pass

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    conn.settimeout(30)
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def hung(conn: socket.socket) -> None:
    time.sleep(3600)


def drip(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
    while True:  # a header that never ends, one byte a second
        conn.sendall(b"X")
        time.sleep(1.0)


def drip_body(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")
    while True:
        conn.sendall(b" ")
        time.sleep(1.0)


def huge(n: int) -> Callable[[socket.socket], None]:
    """A Loki-shaped answer of about `n` bytes, streamed in chunks."""
    def behave(conn: socket.socket) -> None:
        line = json.dumps(["1780283000000000000", "x" * 1000])
        head = b'{"status":"success","data":{"resultType":"streams","result":[{"stream":{"host":"n"},"values":['
        tail = b']}]}}'
        count = max(1, (n - len(head) - len(tail)) // (len(line) + 1))
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
        conn.sendall(head)
        block = ((line + ",") * 1000).encode()
        sent = 0
        while sent + 1000 < count:
            conn.sendall(block)
            sent += 1000
        conn.sendall(",".join([line] * max(1, count - sent)).encode() + tail)
        conn.close()
    return behave


PEAK = """
import resource, subprocess, sys, json
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(json.dumps({"rc": p.returncode, "out": p.stdout, "err": p.stderr,
                  "peak_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def peak_rss_mb(cmd: list[str], timeout: float, env: dict | None = None) -> tuple[int, str, str, float]:
    """(exit status, stdout, stderr, peak RSS in MiB) of `cmd`."""
    p = subprocess.run([sys.executable, "-c", PEAK, *cmd], capture_output=True, text=True, timeout=timeout, env=env)
    d = json.loads(p.stdout)
    return d["rc"], d["out"], d["err"], d["peak_kb"] / 1024
