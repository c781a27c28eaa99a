"""`dataclass`, as `dataclasses.dataclass` makes it, made cheaper to define.

The class is the standard library's dataclass (fields(), replace(), asdict(),
pickling, `__init__`, a frozen class's `__setattr__` all as generated there),
except that `__eq__`, `__hash__` and `__repr__` are three functions shared by
every class instead of source code generated and compiled for each: on Python
3.11 `dataclasses` compiles every method of every class on its own, and the
rule model's, the DSL syntax tree's and the engine's ~100 dataclasses spent
~35 ms of a 0.3 s `rulekit attribute` compiling the ones they can share.  The
shared methods give what the generated ones give: equality of the tuples of
the fields with `compare=True` between instances of the same class (else
NotImplemented), the hash of the fields with `hash=True` (or `compare`, when
`hash` is None) of a frozen class, None for the hash of an unfrozen one,
`Name(field=value, ...)` of the fields with `repr=True`, guarded against
recursion.  A method the class defines itself stands, as with `dataclasses`;
`order=True`, `unsafe_hash=True` and `slots=True` classes are left to
`dataclasses` whole.  Used by `rules/` and the groups above it (the core and
`extract/`, below, keep `dataclasses`'); imports nothing of rulekit.
"""
from __future__ import annotations

import dataclasses
import reprlib
from operator import attrgetter
from typing import Any, Callable

__all__ = ["dataclass"]

_MISSING = dataclasses.MISSING
# class -> what its __eq__ / __hash__ / __repr__ read: filled on a class's first use
# (its fields are known only once `dataclasses` has processed it)
_EQ: dict[type, Callable[[Any], tuple]] = {}
_HASH: dict[type, Callable[[Any], tuple]] = {}
_REPR: dict[type, tuple[str, ...]] = {}


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """A C-speed reader of the tuple of these attributes (attrgetter gives a bare value for one)."""
    if len(names) >= 2:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _eq_key(cls: type) -> Callable[[Any], tuple]:
    got = _EQ.get(cls)
    if got is None:
        got = _EQ[cls] = _getter(tuple(f.name for f in dataclasses.fields(cls) if f.compare))
    return got


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        key = _eq_key(self.__class__)
        return key(self) == key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    cls = self.__class__
    key = _HASH.get(cls)
    if key is None:
        key = _HASH[cls] = _getter(tuple(f.name for f in dataclasses.fields(cls) if (f.compare if f.hash is None else f.hash)))
    return hash(key(self))


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    cls = self.__class__
    names = _REPR.get(cls)
    if names is None:
        names = _REPR[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.repr)
    return f"{cls.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"


def dataclass(cls: type | None = None, /, *, init: bool = True, repr: bool = True, eq: bool = True,
              order: bool = False, unsafe_hash: bool = False, frozen: bool = False, match_args: bool = True,
              kw_only: bool = False, slots: bool = False, weakref_slot: bool = False) -> Any:
    """`dataclasses.dataclass` with the same arguments and the same class (see the module)."""
    def wrap(cls: type) -> type:
        if order or unsafe_hash or slots:
            return dataclasses.dataclass(cls, init=init, repr=repr, eq=eq, order=order, unsafe_hash=unsafe_hash,
                                         frozen=frozen, match_args=match_args, kw_only=kw_only, slots=slots,
                                         weakref_slot=weakref_slot)
        own = cls.__dict__
        if repr and "__repr__" not in own:
            cls.__repr__ = _repr  # type: ignore[assignment]
        if eq:
            # dataclasses' rule: a __hash__ the class body defines stands (a body that
            # defines __eq__ alone got __hash__ = None from Python, which does not count)
            class_hash = own.get("__hash__", _MISSING)
            explicit_hash = not (class_hash is _MISSING or (class_hash is None and "__eq__" in own))
            if "__eq__" not in own:
                cls.__eq__ = _eq  # type: ignore[assignment]
            if not explicit_hash:
                cls.__hash__ = _hash if frozen else None  # type: ignore[assignment]
        return dataclasses.dataclass(cls, init=init, repr=False, eq=False, frozen=frozen, match_args=match_args,
                                     kw_only=kw_only, weakref_slot=weakref_slot)
    return wrap if cls is None else wrap(cls)
