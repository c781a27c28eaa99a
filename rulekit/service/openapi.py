"""The Service's OpenAPI document, as checked in at docs/openapi.json.

`python -m rulekit.service.openapi > docs/openapi.json` regenerates it;
tests/test_service.py fails when the checked-in copy differs from the app's.
The document does not depend on the corpus (a tiny stand-in engine is used).
"""
from __future__ import annotations

import json
import sys
import tempfile
from typing import Any


def document() -> dict[str, Any]:
    from rulekit.service.app import create_app, openapi_document
    from rulekit.service.settings import ServiceSettings

    class _NoCorpus:  # the routes are declared without touching the engine
        rules: tuple = ()
        metric_rules: tuple = ()

    with tempfile.TemporaryDirectory() as d:
        return openapi_document(create_app(_NoCorpus(), ServiceSettings(state_dir=d)))


def render() -> str:
    return json.dumps(document(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
