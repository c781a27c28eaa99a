"""PyTorch flight-recorder dumps (`TORCH_NCCL_TRACE_BUFFER_SIZE`, one file per rank
named `<TORCH_NCCL_DEBUG_INFO_TEMP_FILE prefix><rank>`) read as untrusted input.

A dump is a pickle of plain containers (or the same records as JSON):
`version`, `pg_config` {pg name: {name, desc, ranks: "[0, 1]"}}, `pg_status`
{local pg id: {last_enqueued_collective, last_started_collective,
last_completed_collective}}, `nccl_version` / `comm_lib_version`, and `entries`
[{record_id, pg_id, process_group: (name, desc), collective_seq_id, p2p_seq_id,
op_id, profiling_name, input_sizes, output_sizes, input_dtypes, output_dtypes,
state: scheduled|started|completed, retired, time_created_ns, timeout_ms,
is_p2p, frames, ...}].

Pickles are never executed: every opcode is checked against an allow-list of
builtin containers and scalars *before* anything is unpickled (a `GLOBAL`,
`STACK_GLOBAL`, `REDUCE`, `BUILD`, `INST`, `OBJ`, `NEWOBJ`, `EXT*` or
`PERSID` is a located error: file and byte offset), then loaded by an
Unpickler whose `find_class` and `persistent_load` refuse everything.  Size,
opcodes (so the values a pickle builds), memo indices, the values a JSON dump
holds (counted before it is parsed), a packed dump's decompressed size
(`rulekit.inputs.bounded`) and the number of values normalization touches are
bounded;
only the fields the analysis uses are read (a fixed depth, so no recursion).

Also the transport of a dump through the line-oriented engine: `dump_line()`
packs the normalized dump into one `FR_DUMP` line (zlib + hex, so no
text extractor can match inside it) that the bundled `FlightRecorderDump`
extractor captures and the flight-recorder rules unpack with `unpack_line()`.

Reads and validates only: no analysis (that is `fr_analysis`), no rules, no
engine imports.
"""
from __future__ import annotations

import io
import json
import pickle
import pickletools
import re
import zlib
from dataclasses import field
from pathlib import Path
from typing import Any

from rulekit.rules.records import dataclass
from rulekit.inputs.bounded import ZLIB, LimitExceeded, TooManyValues, inflate, json_loads
from rulekit.inputs.observation import Observation

# Limits on a dump, the same on every path (file, observations.jsonl, the Service, a packed line);
# docs/security.md lists them with the memory they bound.
MAX_DUMP_BYTES = 256 * 1024 * 1024  # a dump file or record
MAX_PACKED_BYTES = 32 * 1024 * 1024  # a packed dump's JSON, decompressed (`dump_line` output is far smaller)
MAX_JSON_VALUES = 2_000_000  # values a JSON dump may hold (checked before parsing: memory, not just bytes)
MAX_PICKLE_OPS = 10_000_000  # opcodes of a pickled dump (each builds at most one value)
MAX_VALUES = 5_000_000
MAX_PROBLEMS = 20
MAX_FRAMES = 4  # Python frames kept per pending entry (the innermost first, as PyTorch writes them)
MAX_MEMO = 10_000_000
SOURCE = "flight_recorder"
FORMAT = "fr"
LINE_PREFIX = "FR_DUMP v1"
STATES = ("scheduled", "started", "completed")

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


@dataclass
class FRDump:
    """One rank's dump, normalized to JSON values."""

    rank: int | None
    where: str
    version: str | None = None
    nccl_version: str | None = None
    pg_config: dict[str, dict[str, Any]] = field(default_factory=dict)  # pg name -> {desc, ranks: [int] | None}
    pg_status: dict[str, dict[str, int]] = field(default_factory=dict)  # local pg id -> last_* seq ids
    entries: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # entries skipped, fields ignored

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "where": self.where, "version": self.version, "nccl_version": self.nccl_version,
                "pg_config": self.pg_config, "pg_status": self.pg_status, "entries": self.entries,
                "problems": self.problems}


# ---- safe pickle ----------------------------------------------------------------------------


class _RefusingUnpickler(pickle.Unpickler):
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


def check_pickle(data: bytes, where: str) -> None:
    """Walk the opcodes without executing any; raise FRDumpError at the first one that
    is not a builtin container or scalar, a memo index out of range, or a truncated
    stream (the byte offset is the opcode's)."""
    n = len(data)
    pos = 0
    ops = 0
    step = _STEP
    while pos < n:
        code = data[pos]
        k = step[code]
        ops += 1
        pos += 1
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


def safe_unpickle(data: bytes, where: str) -> Any:
    """Unpickle plain data only (see the module docstring); FRDumpError otherwise."""
    if len(data) > MAX_DUMP_BYTES:
        raise FRDumpError(where, f"dump is {len(data)} bytes, more than the {MAX_DUMP_BYTES} allowed")
    check_pickle(data, where)
    try:
        return _RefusingUnpickler(io.BytesIO(data)).load()
    except RecursionError:
        raise FRDumpError(where, "pickle nests too deeply") from None
    except MemoryError:
        raise FRDumpError(where, "pickle asks for more memory than a dump can need") from None
    except Exception as e:  # malformed stream: unhashable key, bad arg ...
        raise FRDumpError(where, f"not a valid pickle: {type(e).__name__}: {e}") from None


# ---- JSON values ----------------------------------------------------------------------------


class _Budget:
    """Counts the values normalization touches: a pickle's memo can share one list many
    times over (2**40 leaves in a few hundred bytes), so work is bounded, not sizes."""

    def __init__(self, where: str, limit: int = MAX_VALUES):
        self.where = where
        self.left = limit

    def spend(self, n: int, path: str) -> None:
        self.left -= n
        if self.left < 0:
            raise FRDumpError(self.where, f"more than {MAX_VALUES} values (a reference bomb?) near {path}")


def _text(v: Any) -> str:
    if type(v) is str:
        return v
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "replace")
    return "" if v is None else str(v) if isinstance(v, (int, float)) else ""


def _is_list(v: Any) -> bool:
    return isinstance(v, (list, tuple))


_INT_TEXT = re.compile(r"\s*-?\d{1,30}\s*")


def _int(v: Any) -> int | None:
    if type(v) is int:
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, str) and _INT_TEXT.fullmatch(v):
        return int(v)
    return None


def _ranks(text: Any) -> list[int] | None:
    """pg_config `ranks`: PyTorch writes the list as a string ("[0, 1, 2]"); a list is accepted too."""
    if _is_list(text):
        vals = [_int(x) for x in text]
        return [v for v in vals if v is not None] or None
    if isinstance(text, str):
        vals = [int(x) for x in re.findall(r"-?\d+", text)]
        return vals or None
    return None


def _sizes(v: Any, budget: _Budget, path: str) -> list[list[int]]:
    if not _is_list(v):
        return []
    budget.spend(len(v), path)
    out = []
    for s in v:
        if _is_list(s):
            budget.spend(len(s), path)
            if all(type(y) is int for y in s):  # the usual shape: a list of ints
                out.append(list(s))
            else:
                out.append([x for x in (_int(y) for y in s) if x is not None])
    return out


def _texts(v: Any, budget: _Budget, path: str) -> list[str]:
    if not _is_list(v):
        return []
    budget.spend(len(v), path)
    if all(type(y) is str for y in v):
        return [y for y in v if y]
    return [x for x in (_text(y) for y in v) if x]


_NORMALIZED_KEYS = frozenset({"record_id", "pg_id", "pg", "pg_desc", "collective_seq_id", "p2p_seq_id", "op_id",
                              "profiling_name", "state", "retired", "is_p2p", "input_sizes", "output_sizes",
                              "input_dtypes", "output_dtypes", "time_created_ns", "timeout_ms", "frames"})
_OPT_INT = (int, type(None))


def _normalized(raw: dict[str, Any], budget: _Budget) -> bool:
    """Whether `raw` already is a normalized entry (a packed dump's): the exact keys,
    each of the right type; then it is used as it is."""
    if raw.keys() != _NORMALIZED_KEYS or type(raw["collective_seq_id"]) is not int or raw["state"] not in STATES \
            or type(raw["pg"]) is not str or type(raw["pg_desc"]) is not str or type(raw["profiling_name"]) is not str \
            or not raw["profiling_name"] or type(raw["retired"]) is not bool or type(raw["is_p2p"]) is not bool:
        return False
    for k in ("record_id", "pg_id", "p2p_seq_id", "op_id", "time_created_ns", "timeout_ms"):
        if type(raw[k]) not in _OPT_INT:
            return False
    for k in ("input_sizes", "output_sizes"):
        v = raw[k]
        if type(v) is not list or not all(type(x) is list and all(type(y) is int for y in x) for x in v):
            return False
        budget.spend(len(v) + sum(len(x) for x in v), "entries")
    for k in ("input_dtypes", "output_dtypes"):
        v = raw[k]
        if type(v) is not list or not all(type(x) is str for x in v):
            return False
    f = raw["frames"]
    return type(f) is list and len(f) <= MAX_FRAMES and all(
        type(x) is dict and type(x.get("name")) is str and type(x.get("filename")) is str
        and type(x.get("line")) in _OPT_INT for x in f)


def _entry(raw: Any, i: int, budget: _Budget) -> tuple[dict[str, Any] | None, str | None]:
    """One normalized entry, or (None, problem)."""
    if not isinstance(raw, dict):
        return None, f"entries[{i}] is not a record"
    if "pg" in raw and _normalized(raw, budget):
        return raw, None
    seq = _int(raw.get("collective_seq_id"))
    if seq is None:
        return None, f"entries[{i}].collective_seq_id is missing or not an integer"
    name = raw.get("profiling_name")
    if not isinstance(name, str) or not name:
        return None, f"entries[{i}].profiling_name is missing"
    state = raw.get("state")
    if state not in STATES:
        return None, f"entries[{i}].state is {state!r}, expected one of {', '.join(STATES)}"
    pg = raw.get("process_group")
    if pg is None and "pg" in raw:  # already normalized (a packed dump)
        pg = [raw.get("pg"), raw.get("pg_desc", "")]
    if _is_list(pg) and len(pg) >= 1:
        pg_name = pg[0] if type(pg[0]) is str else _text(pg[0])
        pg_desc = "" if len(pg) < 2 else pg[1] if type(pg[1]) is str else _text(pg[1])
    elif raw.get("pg_id") is not None:
        pg_name, pg_desc = str(raw.get("pg_id")), ""
    else:
        return None, f"entries[{i}] names no process group (process_group / pg_id)"
    op = name.split(":", 1)[-1]
    is_p2p = raw.get("is_p2p")
    if not isinstance(is_p2p, bool):
        is_p2p = op.split(" ")[0] in ("send", "recv")
    frames = []
    raw_frames = raw.get("frames")
    pending = state != "completed" and raw.get("retired") is not True  # only a stuck entry's stack is shown
    for f in raw_frames[:MAX_FRAMES] if pending and _is_list(raw_frames) else ():
        if isinstance(f, dict):
            frames.append({"name": _text(f.get("name")), "filename": _text(f.get("filename")),
                           "line": _int(f.get("line"))})
    where = "entries"
    e = {"record_id": _int(raw.get("record_id")), "pg_id": _int(raw.get("pg_id")), "pg": pg_name, "pg_desc": pg_desc,
         "collective_seq_id": seq, "p2p_seq_id": _int(raw.get("p2p_seq_id")), "op_id": _int(raw.get("op_id")),
         "profiling_name": name, "state": state, "retired": raw.get("retired") is True, "is_p2p": is_p2p,
         "input_sizes": _sizes(raw.get("input_sizes"), budget, where),
         "output_sizes": _sizes(raw.get("output_sizes"), budget, where),
         "input_dtypes": _texts(raw.get("input_dtypes"), budget, where),
         "output_dtypes": _texts(raw.get("output_dtypes"), budget, where),
         "time_created_ns": _int(raw.get("time_created_ns")), "timeout_ms": _int(raw.get("timeout_ms")),
         "frames": frames}
    return e, None


def parse_dump_json(obj: Any, where: str, rank: int | None = None) -> FRDump:
    """Validate and normalize one dump given as JSON values (or the plain containers a
    safe unpickle returned).  The Service and the Blueprint call this on the `dump` of a
    `{"kind": "flight_recorder", "rank": N, "dump": {...}}` record.  Raises FRDumpError
    when the dump is unusable; entries that are not are skipped and listed in `problems`."""
    if not isinstance(obj, dict):
        raise FRDumpError(where, f"a dump is a record (dict), not a {type(obj).__name__}")
    budget = _Budget(where)
    entries = obj.get("entries", [])
    if not _is_list(entries):
        raise FRDumpError(where, "`entries` must be a list")
    if rank is None:
        rank = _int(obj.get("rank"))
    d = FRDump(rank=rank, where=where)
    v = obj.get("version")
    d.version = _text(v) or None
    nv = obj.get("nccl_version", obj.get("comm_lib_version"))
    d.nccl_version = _text(nv) or None
    cfg = obj.get("pg_config") or {}
    if isinstance(cfg, dict):
        budget.spend(len(cfg), "pg_config")
        for name, c in cfg.items():
            if not isinstance(c, dict) or name == "":
                continue
            ranks = c.get("ranks")
            budget.spend(len(ranks) if isinstance(ranks, (str, list, tuple)) else 1, "pg_config")
            d.pg_config[_text(c.get("name")) or _text(name)] = {"desc": _text(c.get("desc")), "ranks": _ranks(ranks)}
    else:
        d.problems.append("`pg_config` is not a record; ignored")
    st = obj.get("pg_status") or {}
    if isinstance(st, dict):
        budget.spend(len(st), "pg_status")
        for pid, s in st.items():
            if isinstance(s, dict):
                d.pg_status[str(pid)] = {k: n for k in ("last_enqueued_collective", "last_started_collective",
                                                        "last_completed_collective")
                                         if (n := _int(s.get(k))) is not None}
    else:
        d.problems.append("`pg_status` is not a record; ignored")
    budget.spend(len(entries), "entries")
    skipped = 0
    for i, raw in enumerate(entries):
        e, problem = _entry(raw, i, budget)
        if e is None:
            skipped += 1
            if skipped <= MAX_PROBLEMS:
                d.problems.append(problem or f"entries[{i}] skipped")
        else:
            d.entries.append(e)
    if skipped > MAX_PROBLEMS:
        d.problems.append(f"and {skipped - MAX_PROBLEMS} more entries skipped")
    return d


# ---- files and records -------------------------------------------------------------------------

_RANK_SUFFIX = re.compile(r"(\d+)(?:\.(?:json|pkl|pickle))?$")


def rank_from_name(name: str) -> int | None:
    """`nccl_trace_rank_3`, `nccl_trace_rank_3.json`, `trace_12.pkl` -> the rank."""
    m = _RANK_SUFFIX.search(Path(name).name)
    return int(m.group(1)) if m else None


def parse_dump_bytes(data: bytes, where: str, rank: int | None = None) -> FRDump:
    """A dump file's bytes: a pickle (first byte 0x80) or JSON."""
    if len(data) > MAX_DUMP_BYTES:
        raise FRDumpError(where, f"dump is {len(data)} bytes, more than the {MAX_DUMP_BYTES} allowed")
    head = data.lstrip()[:1]
    if head in (b"{", b"["):
        text = data.decode("utf-8", "replace")
        try:
            obj = json_loads(text, MAX_JSON_VALUES, "the JSON dump")
        except TooManyValues as e:
            raise FRDumpError(where, str(e)) from None
        except json.JSONDecodeError as e:
            raise FRDumpError(where, f"not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})", e.pos,
                              e.lineno, e.colno) from None
        except RecursionError:
            raise FRDumpError(where, "JSON nests too deeply") from None
    elif not data:
        raise FRDumpError(where, "empty file", 0)
    else:
        obj = safe_unpickle(data, where)
    return parse_dump_json(obj, where, rank)


def read_dump_file(path: Path, label: str | None = None) -> FRDump:
    where = label or str(path)
    try:
        size = path.stat().st_size
        if size > MAX_DUMP_BYTES:
            raise FRDumpError(where, f"dump is {size} bytes, more than the {MAX_DUMP_BYTES} allowed")
        data = path.read_bytes()
    except OSError as e:
        raise FRDumpError(where, f"cannot read: {e.strerror or e}") from None
    return parse_dump_bytes(data, where, rank_from_name(path.name))


def dump_line(dump: FRDump) -> str:
    """The one line that carries a normalized dump through extraction."""
    packed = zlib.compress(json.dumps(dump.to_json(), separators=(",", ":"), sort_keys=True).encode(), 6).hex()
    return f"{LINE_PREFIX} rank={dump.rank if dump.rank is not None else -1} {packed}"


def unpack_line(packed_hex: str, where: str = "flight recorder") -> FRDump:
    """Inverse of `dump_line` for the captured hex payload (validated again)."""
    try:
        text = inflate(bytes.fromhex(packed_hex), MAX_PACKED_BYTES, ZLIB, "the packed dump")
        raw = json_loads(text, MAX_JSON_VALUES, "the packed dump")
    except LimitExceeded as e:
        raise FRDumpError(where, f"refused packed dump: {e}") from None
    except (ValueError, zlib.error, EOFError, RecursionError) as e:
        raise FRDumpError(where, f"corrupt packed dump: {e}") from None
    if not isinstance(raw, dict):
        raise FRDumpError(where, "corrupt packed dump: not a record")
    return parse_dump_json(raw, str(raw.get("where") or where))


def dump_observation(dump: FRDump, label: str | None = None) -> Observation:
    """An Observation the engine ingests (source `flight_recorder`, format `fr`)."""
    return Observation(source=SOURCE, format=FORMAT, label=label or dump.where, lines=[dump_line(dump)])


def observation_from_record(rec: Any, where: str) -> Observation:
    """`{"kind": "flight_recorder", "rank": N, "dump": {...}}` (observations.jsonl, the
    Service payload, a Blueprint connector) -> an Observation; FRDumpError if unusable."""
    if not isinstance(rec, dict):
        raise FRDumpError(where, "a flight-recorder record is an object")
    rank = _int(rec.get("rank"))
    if rank is None:
        raise FRDumpError(where, "a flight-recorder record needs an integer `rank`")
    if "dump" not in rec:
        raise FRDumpError(where, "a flight-recorder record needs the `dump` object")
    return dump_observation(parse_dump_json(rec["dump"], where, rank), where)
