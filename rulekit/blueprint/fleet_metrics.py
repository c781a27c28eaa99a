"""The store as Prometheus metrics (the official `prometheus_client`), for the dashboard's
`GET /metrics`: what a remediation or alerting system scrapes.

    rulekit_attempts_total{outcome}                attempts in the store
    rulekit_rule_fires_total{rule}                 attempts whose evidence a rule produced
    rulekit_attribution_duration_seconds           time to attribute an attempt (histogram)
    rulekit_fleet_nodes{state}                     nodes per state (healthy, suspect, quarantine, cleared)
    rulekit_fleet_node_state{node,state}           1 for each node's current state
    rulekit_fleet_quarantine_proposals             nodes proposed for quarantine now
    rulekit_fleet_circuit_breaker_tripped          1 when the breaker holds every proposal back

Read from the store at each scrape (a custom collector: the counters are the
store's counts, which only grow as results are written); the node states are
folded at most every 30 s (`CachedFleetState`).  A node label only on
the per-node state gauge; never a job id.  The store is opened read-only per
scrape; a store that cannot be read gives no samples, and the scrape says so
in `rulekit_store_up`.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from rulekit.blueprint.fleet_memory import CachedFleetState
from rulekit.blueprint.fleet_policy import FleetPolicy
from rulekit.blueprint.store import StoreError, attempt_outcomes, attribution_seconds, open_ro, rule_fires

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
STATES = ("healthy", "suspect", "quarantine", "cleared")
CONTENT_TYPE = CONTENT_TYPE_LATEST


class StoreCollector:
    def __init__(self, db: str | Path, policy: FleetPolicy | None = None, states: CachedFleetState | None = None):
        self.db, self.policy = Path(db), policy or FleetPolicy.defaults()
        self.states = states or CachedFleetState(self.db, self.policy)

    def describe(self) -> list[Metric]:
        return []  # samples depend on the store: described at collection

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("rulekit_store_up", "1 when the result store could be read at this scrape")
        try:
            con = open_ro(self.db)
            try:
                outcomes, fires, secs = attempt_outcomes(con), rule_fires(con), attribution_seconds(con)
            finally:
                con.close()
            state = self.states.get()
        except (StoreError, sqlite3.Error):
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        c = CounterMetricFamily("rulekit_attempts", "Attempts in the result store, by outcome", labels=["outcome"])
        for o, n in sorted(outcomes.items()):
            c.add_metric([o], n)
        yield c
        c = CounterMetricFamily("rulekit_rule_fires", "Attempts whose evidence a rule produced, by rule",
                                labels=["rule"])
        for r, n in sorted(fires.items()):
            c.add_metric([r], n)
        yield c
        buckets, acc = [], 0
        ordered = sorted(secs)
        i = 0
        for le in BUCKETS:
            while i < len(ordered) and ordered[i] <= le:
                i += 1
            acc = i
            buckets.append((repr(le), acc))
        buckets.append(("+Inf", len(ordered)))
        yield HistogramMetricFamily("rulekit_attribution_duration_seconds", "Time to attribute one attempt",
                                    buckets=buckets, sum_value=sum(ordered))
        counts = state.counts()
        g = GaugeMetricFamily("rulekit_fleet_nodes", "Nodes per fleet state", labels=["state"])
        for s in STATES:
            g.add_metric([s], counts[s])
        yield g
        g = GaugeMetricFamily("rulekit_fleet_node_state", "1 for each node's current fleet state",
                              labels=["node", "state"])
        for n in sorted(state.nodes):
            g.add_metric([n, state.nodes[n].state], 1)
        yield g
        yield GaugeMetricFamily("rulekit_fleet_quarantine_proposals", "Nodes proposed for quarantine now",
                                value=len(state.proposals))
        yield GaugeMetricFamily("rulekit_fleet_circuit_breaker_tripped",
                                "1 when more nodes newly meet the quarantine policy than the breaker allows",
                                value=1 if state.tripped else 0)


def store_registry(db: str | Path, policy: FleetPolicy | None = None,
                   states: CachedFleetState | None = None) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(StoreCollector(db, policy, states))
    return reg


def exposition(reg: CollectorRegistry) -> bytes:
    return generate_latest(reg)
