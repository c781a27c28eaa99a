"""The fleet's memory as the orchestrator reads it: the result store and the fleet
policy -> the `FleetContext` of one attempt.

`FleetMemory(db, policy).context_for(attempt)` reads the store read-only: the
attempts of the attempt's nodes that ended in the policy's window before this
attempt ended, without the attempt's own job, folded into each node's record
(`rulekit.blueprint.fleet`).  A store that cannot be read gives no context and
a note: the attempt is then judged on its own evidence (fail open, as NVRx's
repeat-offender policy does).  With `use_in_verdicts = false` it gives none.
`read_fleet_state(db, policy, as_of)` is every node's state (`rulekit fleet`,
the dashboard's fleet page and its `/metrics`).
"""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from rulekit.blueprint.fleet import FleetState, fleet_context, fleet_state
from rulekit.blueprint.fleet_policy import FleetPolicy
from rulekit.blueprint.model import Attempt
from rulekit.blueprint.store import StoreError, node_attempts, open_ro
from rulekit.inputs.fleet import FleetContext


class FleetMemory:
    def __init__(self, db: str | Path, policy: FleetPolicy | None = None):
        self.db = Path(db)
        self.policy = policy or FleetPolicy.defaults()

    def context_for(self, attempt: Attempt) -> tuple[FleetContext | None, str | None]:
        """(the context, or None; a note when the store could not be read)."""
        if not self.policy.use_in_verdicts or not attempt.nodes:
            return None, None
        as_of = (attempt.end or attempt.start).timestamp() if (attempt.end or attempt.start) else time.time()
        try:
            con = open_ro(self.db)
        except StoreError as e:
            return None, f"the fleet's memory is unavailable ({e}); judged on this attempt's evidence alone"
        try:
            rows = node_attempts(con, as_of - self.policy.window, as_of, list(attempt.nodes), attempt.job_id)
        except sqlite3.Error as e:
            return None, f"the fleet's memory could not be read ({e}); judged on this attempt's evidence alone"
        finally:
            con.close()
        return fleet_context(rows, self.policy, as_of, attempt.nodes), None


class CachedFleetState:
    """`read_fleet_state` now, reused for `ttl` seconds (a dashboard page and every
    Prometheus scrape read it; the fold over a large window takes seconds)."""

    def __init__(self, db: str | Path, policy: FleetPolicy | None = None, ttl: float = 30.0):
        self.db, self.policy, self.ttl = Path(db), policy or FleetPolicy.defaults(), ttl
        self._state: FleetState | None = None
        self._at = 0.0

    def get(self) -> FleetState:
        now = time.monotonic()
        if self._state is None or now - self._at > self.ttl:
            self._state, self._at = read_fleet_state(self.db, self.policy), now
        return self._state


def read_fleet_state(db: str | Path, policy: FleetPolicy | None = None, as_of: float | None = None) -> FleetState:
    """Every node's state in the store as of `as_of` (default: now); StoreError when the
    store cannot be read."""
    policy = policy or FleetPolicy.defaults()
    as_of = time.time() if as_of is None else as_of
    con = open_ro(db)
    try:
        rows = node_attempts(con, as_of - policy.window, as_of)
    except sqlite3.Error as e:
        raise StoreError(f"{db}: cannot read the fleet's history ({e})") from None
    finally:
        con.close()
    return fleet_state(rows, policy, as_of)
