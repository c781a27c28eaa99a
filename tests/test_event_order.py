"""`ordering.first_in_order` (the report's first few events of a key) picks what a
sort of them all by `event_order_key` picks: the same events in the same order,
with ties on the timestamp, events without one, carried timestamps and ranks."""
from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from rulekit.engine.ordering import event_order_key, first_in_order, time_part
from rulekit.engine.store import Event

TIMES = [None, "", "2026-11-03T07:05:35", "2026-11-03T07:05:36", "2026-11-03T07:05:36.500000"]


@st.composite
def events(draw):
    n = draw(st.integers(min_value=0, max_value=30))
    out = []
    for i in range(n):
        fields = {}
        carried = draw(st.sampled_from(TIMES))
        if carried is not None:
            fields["carried_ts"] = carried
        if draw(st.booleans()):
            fields["uptime"] = draw(st.sampled_from(["1.5", "0", "12.25"]))
        if draw(st.booleans()):
            fields[draw(st.sampled_from(["rank", "pg_rank"]))] = draw(st.sampled_from(["3", "0", "x", ""]))
        out.append(Event(id=draw(st.integers(min_value=1, max_value=10_000)) * 100 + i, event_type="bad_node",
                         rule="R", node=draw(st.sampled_from([None, "n1", "n2"])), symptom="S",
                         timestamp=draw(st.sampled_from(TIMES)), line_num=draw(st.sampled_from([None, 1, 7])),
                         datum=draw(st.sampled_from([None, "a", "b"])), source="applog", format="text", label=None,
                         payload={"fields": fields}))
    return out


@settings(max_examples=300, deadline=None)
@given(events(), st.integers(min_value=1, max_value=5))
def test_first_in_order_is_the_sorted_first(evs, k):
    assert [e.id for e in first_in_order(evs, k)] == [e.id for e in heapq.nsmallest(k, evs, key=event_order_key)]


@settings(max_examples=100, deadline=None)
@given(events())
def test_time_part_is_what_the_order_compares_first(evs):
    for e in evs:
        assert time_part(e) == event_order_key(e)[0]
