"""What a filter reads, as data: event types and symptom patterns.

A `Selection` is declared (by a DSL filter's compiled form, or a Python filter)
instead of written as a loop over every event of the stream; the engine's
`EventStream.select` answers it from its symptom index.  Pure data and a
predicate: must not import the engine or touch the store.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from rulekit.rules.records import dataclass
from rulekit.rules.model import event_type_name


@dataclass(frozen=True)
class Selection:
    """What a filter reads, declared rather than written as a loop over the stream:
    events of these `types` (None: any) whose symptom is one of `symptoms` or starts
    with one of `prefixes` (both empty: any symptom).  `EventStream.select` answers it
    from the working set's symptom index."""

    types: tuple[str, ...] | None = None
    symptoms: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()

    @classmethod
    def of(cls, types: str | Sequence[str] | None = None, patterns: Iterable[str] = ()) -> "Selection":
        """From event types (short or stored names) and symptom patterns (`NAME`, `PREFIX*`)."""
        if isinstance(types, str):
            types = (types,)
        pats = list(patterns)
        return cls(None if types is None else tuple(dict.fromkeys(event_type_name(t) for t in types)),
                   frozenset(p for p in pats if not p.endswith("*")), tuple(p[:-1] for p in pats if p.endswith("*")))

    @property
    def any_symptom(self) -> bool:
        return not self.symptoms and not self.prefixes

    def wants(self, symptom: str | None) -> bool:
        if self.any_symptom:
            return True
        return isinstance(symptom, str) and (symptom in self.symptoms or symptom.startswith(self.prefixes))
