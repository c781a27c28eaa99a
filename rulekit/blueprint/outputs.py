"""`--output` specs -> Output objects: `stdout`, `sqlite:PATH`.  Raises ValueError
naming the bad spec; opens (and migrates) a database, writes nothing."""
from __future__ import annotations

from rulekit.blueprint.connectors.base import Output


def open_output(spec: str) -> Output:
    if spec == "stdout":
        from rulekit.blueprint.connectors.stdout import StdoutOutput

        return StdoutOutput()
    if spec.startswith("sqlite:") and len(spec) > len("sqlite:"):
        from rulekit.blueprint.connectors.sqlite import SqliteOutput

        return SqliteOutput(spec[len("sqlite:"):])
    raise ValueError(f"unknown output {spec!r}; use `stdout` or `sqlite:PATH`")
