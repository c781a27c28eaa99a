"""Output: the SQLite result store (`rulekit.blueprint.store`): WAL, versioned schema,
one transaction per result, idempotent upsert per attempt."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from rulekit.blueprint.connectors.base import Output
from rulekit.blueprint.store import open_db, upsert


class SqliteOutput(Output):
    def __init__(self, path: str | Path):
        self.path = Path(path)
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.con = open_db(self.path)

    def write(self, result: dict[str, Any]) -> None:
        upsert(self.con, result)

    def close(self) -> None:
        self.con.close()
