"""Output: one JSON line per result on a text stream (stdout by default).
Writes and flushes; never reformats the result (the lines the store keeps of the
attempt's logs, `kept_logs`, are not printed)."""
from __future__ import annotations

import json
import sys
from typing import IO, Any

from rulekit.blueprint.connectors.base import Output


class StdoutOutput(Output):
    def __init__(self, stream: IO[str] | None = None):
        self.stream = stream or sys.stdout

    def write(self, result: dict[str, Any]) -> None:
        shown = {k: v for k, v in result.items() if k != "kept_logs"}
        self.stream.write(json.dumps(shown, default=str, sort_keys=False) + "\n")
        self.stream.flush()
