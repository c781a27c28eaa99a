"""Event ids in the order one read of the whole file gives them, whatever the chunks.

Extraction stores an event when it is made: an extractor's at its line, an
accumulator's when the accumulator finishes.  An accumulator is fed the rest of
its trigger's chunk at once, so one that finishes there stores its events right
after its trigger line's; one still running at the chunk's end used to store them
when the next chunk finished it, after every later hit of its trigger's chunk, so
event ids (and the trace, which lists events by id) depended on where the chunks
of a log were cut.  Now such an accumulator holds its place (`open_slot`): what is
stored after it waits, in order, and gets its id when every slot before it is
filled (`fill`), so the ids are those of a file read as one chunk.  An accumulator
that runs to the end of its file stores its events after all the file's others, as
it does in one chunk (`end_of_file`: its slot is left empty).

Rows are numbered by the store when built (`EventManager.row`); held ones are
renumbered as they are released, from the first id taken while holding, in their
final order: no id is used twice, and none outside the held rows moves.  Pure
bookkeeping over the store's `add`: no SQL, no rules.
"""
from __future__ import annotations

from typing import Any, Callable


class Slot:
    """An accumulator's place among the rows stored after its trigger."""

    __slots__ = ("rows", "filled")

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.filled = False


class StoreOrder:
    """`store(row)` in the order of one read of the file (see the module docstring)."""

    def __init__(self, add: Callable[[tuple], None], next_id: Callable[[], int]):
        self._add = add  # the store's `add`
        self._next_id = next_id  # the id the store's next row will get
        self._held: list[Any] | None = None  # rows and slots, in their order, while a slot is open
        self._filling: list[tuple] | None = None  # the rows of the slot being filled
        self._release_id = 0  # the id the next released row gets

    def store(self, row: tuple) -> None:
        if self._held is None:
            self._add(row)
        elif self._filling is not None:
            self._filling.append(row)
        else:
            self._held.append(row)

    def open_slot(self) -> Slot:
        """A place, here, for the events of an accumulator that goes on in the next chunk."""
        if self._held is None:
            self._held = []
            self._release_id = self._next_id()
        slot = Slot()
        self._held.append(slot)
        return slot

    def fill(self, slot: Slot, finalize: Callable[[], None]) -> None:
        """Run `finalize` (the accumulator's events, stored with `store`) into its slot."""
        self._filling = slot.rows
        try:
            finalize()
        finally:
            self._filling = None
            slot.filled = True
            self._release()

    def end_of_file(self) -> None:
        """The file ended: accumulators still running leave their slots empty (their events
        come after all others, as in one chunk) and everything held is stored."""
        if self._held is None:
            return
        for item in self._held:
            if type(item) is Slot:
                item.filled = True
        self._release()

    def _release(self) -> None:
        held = self._held
        if held is None:
            return
        done = 0
        for item in held:
            if type(item) is Slot:
                if not item.filled:
                    break
                for row in item.rows:
                    self._give(row)
            else:
                self._give(item)
            done += 1
        del held[:done]
        if not held:
            self._held = None

    def _give(self, row: tuple) -> None:
        eid = self._release_id
        self._release_id = eid + 1
        self._add(row if row[0] == eid else (eid, *row[1:]))
