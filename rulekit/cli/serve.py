"""`rulekit serve`: the attribution Service over HTTP (stdlib server, JSON).

At start-up it loads the corpus once and runs the corpus's inline tests (a
failing test stops the start unless --no-self-test).  Endpoints:
  GET  /v1/health     -> {"status": "ok", "rules": N, "symptoms": N}
  GET  /v1/symptoms   -> the symptom registry
  POST /v1/attribute  -> rulekit.service.payload.attribute_payload (400 with a message on a bad payload)
Rules are never uploaded over the API.
"""
from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional

import typer

from rulekit.cli.app import app

MAX_BODY = 256 << 20


def make_server(engine: Any, host: str, port: int) -> ThreadingHTTPServer:
    from rulekit.service.payload import PayloadError, attribute_payload

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body, default=str).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            if self.path == "/v1/health":
                self._send(200, {"status": "ok", "rules": len(engine.rules), "symptoms": len(engine.registry)})
            elif self.path == "/v1/symptoms":
                self._send(200, [{"name": s.name, "outcome": s.outcome, "sub_domain": s.sub_domain, "rank": s.rank,
                                  "docs": s.docs, "aliases": list(s.aliases)} for s in engine.registry.all()])
            else:
                self._send(404, {"error": f"no such endpoint: {self.path}"})

        def do_POST(self) -> None:  # noqa: N802
            if self.path != "/v1/attribute":
                self._send(404, {"error": f"no such endpoint: {self.path}"})
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                length = -1
            if length < 0 or length > MAX_BODY:
                self._send(413 if length > MAX_BODY else 400, {"error": "a Content-Length up to 256 MiB is required"})
                return
            try:
                payload = json.loads(self.rfile.read(length) or b"null")
            except json.JSONDecodeError as e:
                self._send(400, {"error": f"the body is not JSON: {e.msg} at line {e.lineno} column {e.colno}"})
                return
            try:
                self._send(200, attribute_payload(engine, payload))
            except PayloadError as e:
                self._send(400, {"error": str(e)})

        def log_message(self, fmt: str, *args: Any) -> None:  # quiet by default
            return

    return ThreadingHTTPServer((host, port), Handler)


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, help="Port to listen on."),
    rules: Optional[list[Path]] = typer.Option(None, "--rules", "-r", help="Rule folder(s); default: bundled."),
    self_test: bool = typer.Option(True, "--self-test/--no-self-test", help="Run the inline tests at start-up."),
) -> None:
    """Serve attribution over HTTP (POST /v1/attribute)."""
    from rulekit.cli.attribute import _load
    from rulekit.analysis.testing import run_inline_tests

    engine = _load(rules)
    if self_test:
        failed = [t for t in run_inline_tests(engine) if not t.passed]
        if failed:
            for t in failed[:20]:
                typer.echo(f"self-test failed: {t.span}: {t.name}: {'; '.join(t.mismatches) or t.error}", err=True)
            raise typer.Exit(2)
    server = make_server(engine, host, port)
    typer.echo(f"rulekit serving {len(engine.rules)} rules on http://{host}:{server.server_address[1]}", err=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
