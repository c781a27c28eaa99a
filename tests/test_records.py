"""`rulekit.rules.records.dataclass` against `dataclasses.dataclass`: the same class body
made both ways behaves the same (equality, hashing, repr, frozen assignment,
pickling, replace, fields, subclassing, methods a class defines itself), and it
compiles fewer methods (what it is for)."""
from __future__ import annotations

import dataclasses
import pickle
from dataclasses import FrozenInstanceError, field
from typing import Any

import pytest
from hypothesis import given, strategies as st

from rulekit.rules.records import dataclass as record


def _make(deco: Any, **kw: Any) -> type:
    @deco(**kw)
    class Point:
        x: int
        y: Any = None
        tags: tuple = ()
        note: str = field(default="", compare=False)
        secret: str = field(default="", repr=False)
        weight: float = field(default=0.0, hash=False)
    return Point


@record(frozen=True)
class Pickled:
    a: int
    b: tuple = ()


BOTH = [pytest.param(dataclasses.dataclass, id="dataclasses"), pytest.param(record, id="records")]
values = st.one_of(st.integers(), st.text(max_size=3), st.none(), st.floats(allow_nan=True))


@given(a=st.tuples(st.integers(-3, 3), values, st.text(max_size=2), st.text(max_size=2), st.floats(allow_nan=True)),
       b=st.tuples(st.integers(-3, 3), values, st.text(max_size=2), st.text(max_size=2), st.floats(allow_nan=True)))
def test_equality_hash_and_repr_are_the_standard_ones(a, b):
    for frozen in (False, True):
        std, ours = _make(dataclasses.dataclass, frozen=frozen), _make(record, frozen=frozen)
        sa, sb = std(a[0], a[1], (), a[2], a[3], a[4]), std(b[0], b[1], (), b[2], b[3], b[4])
        oa, ob = ours(a[0], a[1], (), a[2], a[3], a[4]), ours(b[0], b[1], (), b[2], b[3], b[4])
        assert (sa == sb) == (oa == ob)
        assert (sa != sb) == (oa != ob)
        assert (sa == sa) == (oa == oa)  # a NaN field: identity first, as tuples compare
        assert repr(oa) == repr(sa)
        if frozen:
            assert hash(oa) == hash(sa)
        else:
            assert ours.__hash__ is None and std.__hash__ is None


@pytest.mark.parametrize("deco", BOTH)
def test_other_classes_and_subclasses_compare_as_the_standard_does(deco):
    P = _make(deco, frozen=True)

    class Q(P):
        pass

    assert P(1) != Q(1)
    assert P(1).__eq__(Q(1)) is NotImplemented
    assert P(1).__eq__((1,)) is NotImplemented
    assert Q(1) == Q(1) and hash(Q(1)) == hash(P(1))
    assert repr(Q(2)).endswith("<locals>.Q(x=2, y=None, tags=(), note='', weight=0.0)")

    @deco(frozen=True)
    class R(P):
        extra: int = 0

    assert R(1, extra=1) != R(1, extra=2)
    assert R(1) != P(1)
    assert repr(R(1, extra=3)).endswith("R(x=1, y=None, tags=(), note='', weight=0.0, extra=3)")


@pytest.mark.parametrize("deco", BOTH)
def test_frozen_pickling_replace_and_fields(deco):
    P = _make(deco, frozen=True)
    p = P(1, "a", ("t",), "n", "s", 1.5)
    with pytest.raises(FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del p.x  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(Pickled(1, ("x",)))) == Pickled(1, ("x",))
    assert dataclasses.replace(p, x=5).x == 5
    assert [f.name for f in dataclasses.fields(P)] == ["x", "y", "tags", "note", "secret", "weight"]
    assert dataclasses.asdict(p)["tags"] == ("t",)
    assert {p: 1}[P(1, "a", ("t",), "other note", "s", 1.5)] == 1  # note: compare=False


@pytest.mark.parametrize("deco", BOTH)
def test_a_method_the_class_defines_stands(deco):
    @deco(frozen=True)
    class Own:
        a: int

        def __eq__(self, other: object) -> bool:
            return True

        def __repr__(self) -> str:
            return "own"

    @deco(frozen=True)
    class OwnHash:
        a: int

        def __hash__(self) -> int:
            return 7

    @deco
    class Mutable:
        a: int

        def __hash__(self) -> int:
            return 8

    assert Own(1) == Own(2) and repr(Own(1)) == "own"
    assert hash(Own(1)) == hash((1,))  # a body with __eq__ alone: frozen, so the fields are hashed
    assert hash(OwnHash(1)) == 7 and OwnHash(1) == OwnHash(1) and OwnHash(1) != OwnHash(2)
    assert hash(Mutable(1)) == 8


@pytest.mark.parametrize("deco", BOTH)
def test_recursive_repr_and_arguments(deco):
    @deco
    class Box:
        items: list = field(default_factory=list)

    b = Box()
    b.items.append(b)
    assert repr(b).endswith("Box(items=[...])")

    @deco(eq=False, repr=False)
    class Plain:
        a: int

    assert Plain(1) != Plain(1) and "object at" in repr(Plain(1))

    @deco(order=True, frozen=True)
    class Ordered:
        a: int

    assert Ordered(1) < Ordered(2) and sorted([Ordered(3), Ordered(1)])[0] == Ordered(1)


def test_it_generates_only_init_and_a_frozen_classs_assignment_guards(monkeypatch):
    made: list[str] = []
    real = dataclasses._create_fn  # type: ignore[attr-defined]

    def counting(name: str, *args: Any, **kwargs: Any) -> Any:
        made.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(dataclasses, "_create_fn", counting)
    _make(record, frozen=True)
    assert sorted(made) == ["__delattr__", "__init__", "__setattr__"]
    made.clear()
    _make(dataclasses.dataclass, frozen=True)
    assert sorted(made) == ["__delattr__", "__eq__", "__hash__", "__init__", "__repr__", "__setattr__"]
