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
memo indices, nesting depth and the number of values are bounded.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rulekit.inputs.observation import Observation

MAX_DUMP_BYTES = 256 * 1024 * 1024
MAX_DEPTH = 32
MAX_VALUES = 5_000_000
MAX_FRAMES = 4  # Python frames kept per entry (the innermost first, as PyTorch writes them)
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


def check_pickle(data: bytes, where: str) -> None:
    """Walk the opcodes without executing any; raise FRDumpError at the first one that
    is not a builtin container or scalar, or on a truncated / malformed stream."""
    ops = 0
    stream = io.BytesIO(data)
    try:
        for op, arg, pos in pickletools.genops(stream):
            ops += 1
            if op.name not in _ALLOWED:
                why = _WHY.get(op.name, "is not a builtin container or scalar")
                what = f" ({arg})" if op.name == "GLOBAL" and arg else ""
                raise FRDumpError(where, f"pickle opcode {op.name}{what} {why}; a flight-recorder dump is plain "
                                         "dicts, lists and scalars, so it was refused without being run", pos)
            if op.name in _MEMO_OPS and isinstance(arg, int) and (arg > MAX_MEMO or arg > 2 * ops + 16):
                raise FRDumpError(where, f"pickle memo index {arg} is out of range", pos)
            if op.name == "STOP":
                return
    except FRDumpError:
        raise
    except (ValueError, EOFError) as e:  # pickletools reports truncation / bad args as ValueError
        raise FRDumpError(where, f"not a complete pickle ({e})", stream.tell()) from None
    raise FRDumpError(where, "not a complete pickle (no STOP opcode: truncated?)", len(data))


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


def _plain(obj: Any, where: str, path: str = "", depth: int = 0, budget: list[int] | None = None) -> Any:
    """Copy into JSON values (tuples/sets -> lists, bytes -> text), bounding depth and size."""
    if budget is None:
        budget = [MAX_VALUES]
    budget[0] -= 1
    if budget[0] < 0:
        raise FRDumpError(where, f"more than {MAX_VALUES} values (a reference bomb?) near {path or 'the top'}")
    if depth > MAX_DEPTH:
        raise FRDumpError(where, f"nesting deeper than {MAX_DEPTH} at {path or 'the top'}")
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj).decode("utf-8", "replace")
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            key = k if isinstance(k, str) else str(_plain(k, where, path, depth + 1, budget))
            out[key] = _plain(v, where, f"{path}.{key}" if path else key, depth + 1, budget)
        return out
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj
        return [_plain(v, where, f"{path}[{i}]", depth + 1, budget) for i, v in enumerate(items)]
    raise FRDumpError(where, f"{path or 'the top'} holds a {type(obj).__name__}, which is not plain data")


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and re.fullmatch(r"-?\d+", v.strip()):
        return int(v)
    return None


def _ranks(text: Any) -> list[int] | None:
    """pg_config `ranks`: PyTorch writes the list as a string ("[0, 1, 2]"); a list is accepted too."""
    if isinstance(text, list):
        vals = [_int(x) for x in text]
        return [v for v in vals if v is not None] or None
    if isinstance(text, str):
        vals = [int(x) for x in re.findall(r"-?\d+", text)]
        return vals or None
    return None


def _sizes(v: Any) -> list[list[int]]:
    if not isinstance(v, list):
        return []
    out = []
    for s in v:
        if isinstance(s, list):
            out.append([x for x in (_int(y) for y in s) if x is not None])
    return out


def _entry(raw: Any, i: int) -> tuple[dict[str, Any] | None, str | None]:
    """One normalized entry, or (None, problem)."""
    if not isinstance(raw, dict):
        return None, f"entries[{i}] is not a record"
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
    if isinstance(pg, list) and len(pg) >= 1:
        pg_name, pg_desc = str(pg[0]), str(pg[1]) if len(pg) > 1 else ""
    elif raw.get("pg_id") is not None:
        pg_name, pg_desc = str(raw.get("pg_id")), ""
    else:
        return None, f"entries[{i}] names no process group (process_group / pg_id)"
    op = name.split(":", 1)[-1]
    is_p2p = raw.get("is_p2p")
    if not isinstance(is_p2p, bool):
        is_p2p = op.split(" ")[0] in ("send", "recv")
    frames = []
    for f in raw.get("frames") or []:
        if isinstance(f, dict) and len(frames) < MAX_FRAMES:
            frames.append({"name": str(f.get("name", "")), "filename": str(f.get("filename", "")),
                           "line": _int(f.get("line"))})
    e = {"record_id": _int(raw.get("record_id")), "pg_id": _int(raw.get("pg_id")), "pg": pg_name, "pg_desc": pg_desc,
         "collective_seq_id": seq, "p2p_seq_id": _int(raw.get("p2p_seq_id")), "op_id": _int(raw.get("op_id")),
         "profiling_name": name, "state": state, "retired": raw.get("retired") is True, "is_p2p": is_p2p,
         "input_sizes": _sizes(raw.get("input_sizes")), "output_sizes": _sizes(raw.get("output_sizes")),
         "input_dtypes": [str(x) for x in raw.get("input_dtypes") or [] if isinstance(x, str)],
         "output_dtypes": [str(x) for x in raw.get("output_dtypes") or [] if isinstance(x, str)],
         "time_created_ns": _int(raw.get("time_created_ns")), "timeout_ms": _int(raw.get("timeout_ms")),
         "frames": frames}
    return e, None


def parse_dump_json(obj: Any, where: str, rank: int | None = None) -> FRDump:
    """Validate and normalize one dump given as JSON values (or the plain containers a
    safe unpickle returned).  The Service and the Blueprint call this on the `dump` of a
    `{"kind": "flight_recorder", "rank": N, "dump": {...}}` record.  Raises FRDumpError
    when the dump is unusable; entries that are not are skipped and listed in `problems`."""
    obj = _plain(obj, where)
    if not isinstance(obj, dict):
        raise FRDumpError(where, f"a dump is a record (dict), not a {type(obj).__name__}")
    entries = obj.get("entries", [])
    if not isinstance(entries, list):
        raise FRDumpError(where, "`entries` must be a list")
    if rank is None:
        rank = _int(obj.get("rank"))
    d = FRDump(rank=rank, where=where)
    v = obj.get("version")
    d.version = None if v is None else str(v)
    nv = obj.get("nccl_version", obj.get("comm_lib_version"))
    d.nccl_version = str(nv) if nv not in (None, "") else None
    cfg = obj.get("pg_config") or {}
    if isinstance(cfg, dict):
        for name, c in cfg.items():
            if not isinstance(c, dict) or name == "":
                continue
            d.pg_config[str(c.get("name") or name)] = {"desc": str(c.get("desc", "")), "ranks": _ranks(c.get("ranks"))}
    else:
        d.problems.append("`pg_config` is not a record; ignored")
    st = obj.get("pg_status") or {}
    if isinstance(st, dict):
        for pid, s in st.items():
            if isinstance(s, dict):
                d.pg_status[str(pid)] = {k: n for k in ("last_enqueued_collective", "last_started_collective",
                                                        "last_completed_collective")
                                         if (n := _int(s.get(k))) is not None}
    else:
        d.problems.append("`pg_status` is not a record; ignored")
    for i, raw in enumerate(entries):
        e, problem = _entry(raw, i)
        if e is None:
            d.problems.append(problem or f"entries[{i}] skipped")
        else:
            d.entries.append(e)
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
            obj = json.loads(text)
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
        raw = json.loads(zlib.decompress(bytes.fromhex(packed_hex)).decode())
    except (ValueError, zlib.error) as e:
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
