"""One worker process of `rulekit serve --workers N`: uvicorn imports
`create_worker_app` (factory) in each spawned worker, which loads the corpus
once for that process and builds the app from the settings and the start-up
self-test summary the parent put in the environment.

Must not run the self-test again (the parent did, once, before binding) and
must not read command-line arguments.
"""
from __future__ import annotations

import json
import os
from typing import Any

from rulekit.service.app import create_app
from rulekit.service.limits import http_protocol
from rulekit.service.settings import ServiceSettings, token_from_env
from rulekit.service.startup import load_service_corpus

SELF_TEST_ENV = "RULEKIT_SERVICE_SELF_TEST"


def create_worker_app() -> Any:
    settings = ServiceSettings.from_env()
    http_protocol(settings.http, settings.header_timeout_s)  # (the class uvicorn runs here: its header deadline)
    tested = json.loads(os.environ.get(SELF_TEST_ENV) or "{}")
    engine, digest, _ = load_service_corpus(settings.rules)
    summary = dict(tested.get("summary") or {"ok": None, "note": "not run"})
    if tested.get("corpus_hash") and tested["corpus_hash"] != digest:
        summary = {**summary, "ok": False,
                   "note": f"this worker loaded corpus {digest[:12]}, but start-up tested {tested['corpus_hash'][:12]} "
                           "(the rule files changed while the Service started); restart it"}
    for source, fmt in (("applog", "text"), ("syslog", "text"), ("scheduler", "slurm")):
        engine.scan_plan(source, fmt)  # build the acceleration structure before the first request
    return create_app(engine, settings, corpus_hash=digest, self_test=summary, token=token_from_env())
