"""`storeorder.StoreOrder`: rows stored while an accumulator runs on past its chunk wait
for its events, which take the accumulator's place; ids are renumbered in that order,
each used once, none outside the held rows moved.  Data: random interleavings of
stores, accumulators that go on into a later chunk and accumulators finishing."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rulekit.engine.storeorder import StoreOrder


class _Store:
    """A store's `row` numbering and `add`, as `EventManager` does them."""

    def __init__(self, first_id: int = 1):
        self.next = first_id
        self.added: list[tuple] = []

    def row(self, label: str) -> tuple:
        eid = self.next
        self.next += 1
        return (eid, label, "payload")

    def add(self, row: tuple) -> None:
        self.added.append(row)

    def next_id(self) -> int:
        return self.next


def test_rows_wait_for_the_accumulator_before_them():
    store = _Store(10)
    order = StoreOrder(store.add, store.next_id)
    order.store(store.row("before"))
    a = order.open_slot()
    order.store(store.row("r1"))
    b = order.open_slot()
    order.store(store.row("r2"))
    order.fill(b, lambda: order.store(store.row("b1")))
    assert [r[1] for r in store.added] == ["before"]  # all wait for a
    order.fill(a, lambda: [order.store(store.row(x)) for x in ("a1", "a2")])
    assert store.added == [(10, "before", "payload"), (11, "a1", "payload"), (12, "a2", "payload"),
                           (13, "r1", "payload"), (14, "b1", "payload"), (15, "r2", "payload")]
    order.store(store.row("after"))
    assert store.added[-1] == (16, "after", "payload")  # nothing held any more: stored at once


def test_an_accumulator_running_to_the_end_of_the_file_stores_last():
    store = _Store()
    order = StoreOrder(store.add, store.next_id)
    order.open_slot()
    order.store(store.row("r1"))
    order.end_of_file()
    order.store(store.row("a1"))  # (finished after the file ended, without its slot)
    assert [r[:2] for r in store.added] == [(1, "r1"), (2, "a1")]


ops = st.lists(st.one_of(st.just(("store",)), st.just(("open",)), st.tuples(st.just("fill"), st.integers(0, 9),
                                                                             st.integers(0, 3))), max_size=60)


@settings(max_examples=400, deadline=None)
@given(ops, st.integers(1, 1000))
def test_any_interleaving_gives_one_chunks_order(script, first_id):
    """The rows come out as if each accumulator's events had been stored at its place,
    numbered from the first id on, each once; an accumulator not finished when the file
    ends leaves its place empty and stores after everything."""
    store = _Store(first_id)
    order = StoreOrder(store.add, store.next_id)
    expected: list = []  # labels and slot lists, in place
    slots: list = []  # (slot, its list in `expected`), open ones
    n = 0
    for op in script:
        if op[0] == "store":
            label = f"r{n}"
            n += 1
            order.store(store.row(label))
            expected.append(label)
        elif op[0] == "open":
            place: list = []
            slots.append((order.open_slot(), place))
            expected.append(place)
        elif slots:
            slot, place = slots.pop(op[1] % len(slots))
            labels = [f"a{n + k}" for k in range(op[2])]
            n += op[2]
            order.fill(slot, lambda: [order.store(store.row(x)) for x in labels])
            place.extend(labels)
    order.end_of_file()
    tail = [f"t{k}" for k in range(len(slots))]  # the ones still open finish after the file
    for label in tail:
        order.store(store.row(label))
    want = [x for item in expected for x in (item if isinstance(item, list) else [item])] + tail
    assert [r[1] for r in store.added] == want
    assert [r[0] for r in store.added] == list(range(first_id, first_id + len(want)))
