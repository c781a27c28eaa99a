"""The safe reader of pickled flight-recorder dumps: plain containers and scalars
only, never a class, a function or a persistent id.

Two defences, both always on where a pickle is read in this process:
- `check_pickle` walks every opcode *before* anything is unpickled and refuses
  the first that is not a builtin container or scalar (`GLOBAL`, `STACK_GLOBAL`,
  `REDUCE`, `BUILD`, `INST`, `OBJ`, `NEWOBJ`, `EXT*`, `PERSID`: a located error,
  file and byte offset), a memo index out of range (a memo that large would be
  allocated by the C unpickler: a memory bomb) or a truncated stream;
- `RefusingUnpickler` (C speed) refuses every class and persistent id itself:
  whatever reaches it builds only lists, dicts, tuples, sets and scalars.

`load_refusing` is the second alone, for a process whose address space is
capped (`rulekit.inputs.fr_bulk`): there a memo bomb is a MemoryError, and the
walk runs afterwards only to locate the refused opcode for the message.

Reads bytes it is given; no files, no normalization (that is `flight_recorder`).
"""
from __future__ import annotations

import io
import pickle
import pickletools
from typing import Any

MAX_DUMP_BYTES = 256 * 1024 * 1024  # the one bound on a dump's bytes, decompressed (file, record, any path)
MAX_MEMO = 10_000_000
MAX_PICKLE_OPS = 10_000_000  # opcodes of a dump walked here (each builds at most one value)
# tuples inside tuples: hashing one (a dict key, a set element) recurses in C without a
# guard, and a million levels overflow the C stack (a crash, not an exception); a dump's
# values nest a few levels
MAX_TUPLE_NESTING = 1000


class FRDumpError(ValueError):
    """A dump that cannot be used: `where` (file or record), optional byte offset."""

    def __init__(self, where: str, message: str, offset: int | None = None, line: int | None = None,
                 col: int | None = None):
        self.where = where
        self.message = message
        self.offset = offset
        self.line = line
        self.col = col
        at = f" at byte {offset}" if offset is not None else ""
        super().__init__(f"{where}{at}: {message}")

    def __reduce__(self):  # crosses from a reader process intact (the default passes one argument)
        return (type(self), (self.where, self.message, self.offset, self.line, self.col))


# opcodes that build builtin containers and scalars; anything else can call code
_ALLOWED = frozenset({
    "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP",
    "NONE", "NEWTRUE", "NEWFALSE", "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4",
    "FLOAT", "BINFLOAT", "STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE",
    "SHORT_BINUNICODE", "BINUNICODE8", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8",
    "EMPTY_LIST", "APPEND", "APPENDS", "LIST", "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
    "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS", "EMPTY_SET", "ADDITEMS", "FROZENSET",
    "PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE", "GET", "BINGET", "LONG_BINGET",
})
_MEMO_OPS = frozenset({"PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET"})
_WHY = {
    "GLOBAL": "imports a class or function", "STACK_GLOBAL": "imports a class or function",
    "INST": "instantiates a class", "OBJ": "instantiates a class", "NEWOBJ": "instantiates a class",
    "NEWOBJ_EX": "instantiates a class", "REDUCE": "calls a function", "BUILD": "calls __setstate__",
    "EXT1": "imports through the copyreg registry", "EXT2": "imports through the copyreg registry",
    "EXT4": "imports through the copyreg registry", "PERSID": "loads a persistent object",
    "BINPERSID": "loads a persistent object", "NEXT_BUFFER": "reads an out-of-band buffer",
    "READONLY_BUFFER": "reads an out-of-band buffer",
}


# ---- safe pickle ----------------------------------------------------------------------------


class RefusingUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:  # noqa: D401 - pickle API
        raise pickle.UnpicklingError(f"refused to load {module}.{name}: a flight-recorder dump holds no classes")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("refused a persistent id: a flight-recorder dump holds none")


# per opcode byte: how to step over its argument.  >= 0: that many fixed bytes; the
# negative codes below; None: not allowed.  Only PUT / LONG_BINPUT can grow the memo far
# (BINPUT's index is one byte; GETs only read it), so only they are range-checked.
_FORBIDDEN, _NEWLINE, _LEN1, _LEN4, _LEN4S, _LEN8, _BIG_PUT, _TEXT_PUT, _STOP = range(-1, -10, -1)
_STEP: list[int | None] = [None] * 256
for _op in pickletools.opcodes:
    _c = ord(_op.code)
    if _op.name not in _ALLOWED:
        _STEP[_c] = _FORBIDDEN
        continue
    _a = _op.arg
    if _op.name == "STOP":
        _STEP[_c] = _STOP
    elif _op.name == "LONG_BINPUT":
        _STEP[_c] = _BIG_PUT
    elif _op.name == "PUT":
        _STEP[_c] = _TEXT_PUT
    elif _a is None:
        _STEP[_c] = 0
    elif _a.n > 0:
        _STEP[_c] = _a.n
    elif _a.n == pickletools.UP_TO_NEWLINE:
        _STEP[_c] = _NEWLINE
    else:
        _STEP[_c] = {pickletools.TAKEN_FROM_ARGUMENT1: _LEN1, pickletools.TAKEN_FROM_ARGUMENT4: _LEN4S,
                     pickletools.TAKEN_FROM_ARGUMENT4U: _LEN4, pickletools.TAKEN_FROM_ARGUMENT8U: _LEN8}[_a.n]
_NAMES = {ord(op.code): op.name for op in pickletools.opcodes}
_NESTERS = frozenset(ord(op.code) for op in pickletools.opcodes if op.name in ("TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
                                                                              "FROZENSET"))


def _tuple_nesting(data: bytes) -> tuple[int, int]:
    """The deepest nesting of tuples (and frozensets) the pickle builds, and the byte offset
    of the opcode that first built a value deeper than `MAX_TUPLE_NESTING` (else -1): a stack machine
    over the opcodes that tracks, per value, how many tuples deep it is (lists, dicts and
    sets count 0: hashing stops at them).  Only called on a pickle `check_pickle` already
    walked, when it holds more tuple-building opcodes than `MAX_TUPLE_NESTING`."""
    stack: list[int] = []
    marks: list[int] = []
    memo: dict[int, int] = {}
    deepest = 0

    def pop_mark() -> list[int]:
        at = marks.pop() if marks else 0
        items = stack[at:]
        del stack[at:]
        return items

    for op, arg, pos in pickletools.genops(data):
        name = op.name
        if name in ("TUPLE", "FROZENSET", "TUPLE1", "TUPLE2", "TUPLE3"):
            if name in ("TUPLE", "FROZENSET"):
                items = pop_mark()
            else:
                n = int(name[-1])
                items = stack[len(stack) - n:] if n <= len(stack) else list(stack)
                del stack[max(0, len(stack) - n):]
            d = 1 + max(items, default=0)
            deepest = max(deepest, d)
            if deepest > MAX_TUPLE_NESTING:
                return deepest, pos
            stack.append(d)
        elif name == "MARK":
            marks.append(len(stack))
        elif name in ("LIST", "DICT"):
            pop_mark()
            stack.append(0)
        elif name in ("APPENDS", "SETITEMS", "ADDITEMS", "POP_MARK"):
            pop_mark()
        elif name == "APPEND" or name == "POP":
            if stack:
                stack.pop()
            elif name == "POP" and marks:
                marks.pop()
        elif name == "SETITEM":
            del stack[max(0, len(stack) - 2):]
        elif name == "DUP":
            stack.append(stack[-1] if stack else 0)
        elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[int(arg)] = stack[-1] if stack else 0
        elif name == "MEMOIZE":
            memo[len(memo)] = stack[-1] if stack else 0
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            stack.append(memo.get(int(arg), 0))
        elif name in ("PROTO", "FRAME", "STOP"):
            pass
        else:  # every other allowed opcode pushes one scalar or an empty container
            stack.append(0)
    return deepest, -1


def check_pickle(data: bytes, where: str) -> None:
    """Walk the opcodes without executing any; raise FRDumpError at the first one that
    is not a builtin container or scalar, a memo index out of range, or a truncated
    stream (the byte offset is the opcode's)."""
    n = len(data)
    pos = 0
    ops = 0
    nesters = 0
    step = _STEP
    nesting = _NESTERS
    while pos < n:
        code = data[pos]
        k = step[code]
        ops += 1
        pos += 1
        if code in nesting:
            nesters += 1
        if ops > MAX_PICKLE_OPS:
            raise FRDumpError(where, f"more than {MAX_PICKLE_OPS} pickle opcodes: more values than a dump can "
                                     "need (refused before unpickling)", pos - 1)
        if k is not None and k >= 0:
            pos += k
            continue
        at = pos - 1
        if k is None:
            raise FRDumpError(where, f"byte 0x{code:02x} is not a pickle opcode (not a pickle, or corrupt)", at)
        name = _NAMES[code]
        if k == _FORBIDDEN:
            why = _WHY.get(name, "is not a builtin container or scalar")
            raise FRDumpError(where, f"pickle opcode {name} {why}; a flight-recorder dump is plain dicts, lists "
                                     "and scalars, so it was refused without being run", at)
        if k == _STOP:
            if nesters > MAX_TUPLE_NESTING:
                deep, deep_at = _tuple_nesting(data[:pos])
                if deep > MAX_TUPLE_NESTING:
                    raise FRDumpError(where, f"tuples nest more than {MAX_TUPLE_NESTING} deep: more than a dump can "
                                             "need (refused before unpickling)", deep_at)
            return
        if k in (_NEWLINE, _TEXT_PUT):
            nl = data.find(b"\n", pos)
            if nl < 0:
                raise FRDumpError(where, f"not a complete pickle ({name} argument is cut off)", at)
            arg, pos = data[pos:nl], nl + 1
            if k == _TEXT_PUT and (not arg.isdigit() or len(arg) > 9 or int(arg) > min(MAX_MEMO, 2 * ops + 16)):
                raise FRDumpError(where, f"pickle memo index {arg[:20].decode('latin-1')} is out of range", at)
            continue
        if k == _BIG_PUT:
            idx = int.from_bytes(data[pos:pos + 4], "little")
            if idx > min(MAX_MEMO, 2 * ops + 16):
                raise FRDumpError(where, f"pickle memo index {idx} is out of range", at)
            pos += 4
            continue
        width = 1 if k == _LEN1 else 8 if k == _LEN8 else 4
        if pos + width > n:
            raise FRDumpError(where, f"not a complete pickle ({name} length is cut off)", at)
        length = int.from_bytes(data[pos:pos + width], "little", signed=k == _LEN4S)
        pos += width + length
        if length < 0 or pos > n:
            raise FRDumpError(where, f"not a complete pickle ({name} of {length} bytes is cut off)", at)
    raise FRDumpError(where, "not a complete pickle (no STOP opcode: truncated?)", n)


def check_size(size: int, where: str) -> None:
    """The one place a dump's size is bounded (`MAX_DUMP_BYTES`): every path that reads a
    dump (a file, a record, decompressed bytes) calls it before parsing."""
    if size > MAX_DUMP_BYTES:
        raise FRDumpError(where, f"dump is {size} bytes, more than the {MAX_DUMP_BYTES} allowed")


def load_refusing(data: bytes, where: str) -> Any:
    """The refusing C unpickler alone (no opcode walk first: only where the address space
    is capped, see the module docstring).  On any failure the walk runs to name the
    refused opcode and its offset; FRDumpError either way."""
    check_size(len(data), where)
    try:
        return RefusingUnpickler(_buffered(data)).load()
    except MemoryError:
        check_pickle(data, where)  # a memo index out of range is the usual cause: name it
        raise FRDumpError(where, "pickle asks for more memory than a dump can need") from None
    except Exception as e:  # a refused class, a malformed stream: locate it if the walk can
        check_pickle(data, where)
        raise FRDumpError(where, f"not a valid pickle: {type(e).__name__}: {e}") from None


def safe_unpickle(data: bytes, where: str) -> Any:
    """Unpickle plain data only (see the module docstring); FRDumpError otherwise."""
    check_size(len(data), where)
    check_pickle(data, where)
    try:
        return RefusingUnpickler(_buffered(data)).load()
    except RecursionError:
        raise FRDumpError(where, "pickle nests too deeply") from None
    except MemoryError:
        raise FRDumpError(where, "pickle asks for more memory than a dump can need") from None
    except Exception as e:  # malformed stream: unhashable key, bad arg ...
        raise FRDumpError(where, f"not a valid pickle: {type(e).__name__}: {e}") from None


def _buffered(data: bytes) -> io.BufferedReader:
    """The bytes as a file with `peek`: the C unpickler then reads them in blocks (a bare
    BytesIO makes it call `read` from C for every opcode: 3x slower)."""
    return io.BufferedReader(io.BytesIO(data), max(8192, min(len(data) + 1, 1 << 24)))
