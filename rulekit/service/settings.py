"""The Service's settings: one dataclass, read once at the edge (`rulekit serve`)
and handed to every worker process as one JSON environment variable
(`RULEKIT_SERVICE_SETTINGS`), since uvicorn starts workers by import string.

The bearer token is the exception: it is read from `RULEKIT_SERVICE_TOKEN` (never
from the command line, where `ps` would show it) and is not part of the JSON.
No I/O beyond the environment.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, field

from rulekit.rules.records import dataclass

SETTINGS_ENV = "RULEKIT_SERVICE_SETTINGS"
TOKEN_ENV = "RULEKIT_SERVICE_TOKEN"


@dataclass(frozen=True)
class ServiceSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    rules: list[str] = field(default_factory=list)  # the rule paths loaded, in order (`rulekit serve` puts the
    # bundled folder first unless --no-bundled); empty: the bundled corpus
    max_body_bytes: int = 64 << 20  # a larger request body is refused with 413 while it streams
    header_timeout_s: float = 10.0  # a connection must send complete request headers within this
    body_timeout_s: float = 30.0  # ... and each chunk of the body within this (408 otherwise)
    body_deadline_s: float = 120.0  # ... and the whole body within this, however it trickles (408 otherwise)
    max_body_values: int = 6_000_000  # JSON values a body may hold (counted before parsing; 413 beyond)
    request_timeout_s: float = 300.0  # the work of one request (attribution); past it a JSON 503, thread abandoned
    keep_alive_s: int = 20  # idle keep-alive connections are closed after this; longer than clients' own
    # idle expiry (httpx, requests: 5 s) so a client never reuses a connection the server is closing
    graceful_shutdown_s: int = 30  # on SIGTERM/SIGINT: finish in-flight requests for up to this long
    job_ttl_s: float = 900.0  # an open job idle this long is retired
    max_open_jobs: int = 1000  # POST /v1/jobs answers 429 beyond this
    state_dir: str = ""  # spool of the open jobs (shared by the workers); set by `rulekit serve`
    allow_failing_tests: bool = False
    access_log: bool = True
    max_concurrency: int = 1024  # connections+tasks per worker before uvicorn answers 503
    http: str = "auto"  # uvicorn's HTTP/1.1 protocol (`limits.http_protocol`): httptools when installed, else h11
    backlog: int = 2048

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_env(environ: dict[str, str] | None = None) -> "ServiceSettings":
        env = os.environ if environ is None else environ
        raw = env.get(SETTINGS_ENV)
        return ServiceSettings(**json.loads(raw)) if raw else ServiceSettings()


def token_from_env(environ: dict[str, str] | None = None) -> str | None:
    env = os.environ if environ is None else environ
    tok = env.get(TOKEN_ENV, "").strip()
    return tok or None
