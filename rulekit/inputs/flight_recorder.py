"""PyTorch flight-recorder dumps (`TORCH_NCCL_TRACE_BUFFER_SIZE` / `TORCH_FR_BUFFER_SIZE`,
one file per rank named `<TORCH_NCCL_DEBUG_INFO_TEMP_FILE prefix><rank>`) read as
untrusted input into a compact, columnar `FRDump` the engine carries as data.

A dump is a pickle of plain containers (or the same records as JSON):
`version`, `pg_config` {pg name: {name, desc, ranks: "[0, 1]"}}, `pg_status`
{local pg id: {last_enqueued_collective, last_started_collective,
last_completed_collective}}, `nccl_version` / `comm_lib_version`, and `entries`
[{record_id, pg_id, process_group: (name, desc), collective_seq_id, p2p_seq_id,
op_id, profiling_name, input_sizes, output_sizes, input_dtypes, output_dtypes,
state: scheduled|started|completed, retired, time_created_ns,
time_discovered_started_ns, time_discovered_completed_ns, timeout_ms, is_p2p,
frames, ...}].  Pickles go through `fr_pickle` (never a class, a function or a
persistent id).

A dump of 2,000 entries unpickles into ~40,000 Python objects; what the analysis
needs of it is a few integers an entry.  So each dump becomes columns (`array`s
in record order: process group, collective and p2p sequence ids, state,
signature, times, record id) read from the entries with C-speed passes
(`_columns_fast`) when every entry has the usual shape; an entry of another
shape sends the dump through the per-entry reader (`_entry`, which lists what
it skipped in `problems`).  An entry's signature is its op, sizes and dtypes
(one `marshal` blob per distinct signature of the dump); only the entries that
did not complete keep their whole record (with up to `MAX_FRAMES` frames).
`progress` is each process group's oldest, last completed, started and enqueued
collective (the entries and `pg_status` together).  Sizes, values read and the
frames kept are bounded.

Reads and validates only: no analysis (that is `fr_analysis`), no rules, no
engine imports; many files at once is `fr_bulk`.
"""
from __future__ import annotations

import json
import marshal
import re
from array import array
from dataclasses import field
from collections import Counter
from itertools import chain, compress, groupby
from operator import itemgetter, methodcaller, mul
from pathlib import Path
from typing import Any, Iterable

from rulekit.rules.records import dataclass
from rulekit.inputs.bounded import TooManyValues, json_loads
from rulekit.inputs.fr_pickle import (  # noqa: F401 - re-exported: the reader's public names
    MAX_DUMP_BYTES,
    FRDumpError,
    check_pickle,
    check_size,
    load_refusing,
    safe_unpickle,
)

MAX_VALUES = 5_000_000
MAX_JSON_VALUES = 2_000_000  # values a JSON dump may hold (counted before parsing: memory, not just bytes)
MAX_PROBLEMS = 20
MAX_FRAMES = 4  # Python frames kept per pending entry (the innermost first, as PyTorch writes them)
SOURCE = "flight_recorder"
FORMAT = "fr"
STATES = ("scheduled", "started", "completed")
SCHEDULED, STARTED, COMPLETED = 0, 1, 2
_STATE_CODE = {"scheduled": SCHEDULED, "started": STARTED, "completed": COMPLETED}
_NONE = type(None)


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


@dataclass
class FRDump:
    """One rank's dump: header records, and its entries as columns (module docstring)."""

    rank: int | None
    where: str
    version: str | None = None
    nccl_version: str | None = None
    pg_config: dict[str, dict[str, Any]] = field(default_factory=dict)  # pg name -> {desc, ranks: [int] | None}
    pg_status: dict[str, dict[str, int]] = field(default_factory=dict)  # local pg id -> last_* seq ids
    problems: list[str] = field(default_factory=list)  # entries skipped, fields ignored
    nbytes: int = 0  # bytes of the file or record it was read from
    groups: list[tuple[str, str]] = field(default_factory=list)  # group index -> (pg name, desc)
    local_ids: dict[int, int] = field(default_factory=dict)  # local pg id (`pg_id`, `pg_status` keys) -> group index
    pg: array = field(default_factory=lambda: array("q"))  # per entry: group index
    seq: array = field(default_factory=lambda: array("q"))  # collective_seq_id
    state: bytes = b""  # SCHEDULED / STARTED / COMPLETED (a retired entry completed)
    p2p: bytes = b""  # 1: a point-to-point op
    coll: bytes = b""  # group index + 1 of a collective, 0 of a p2p op (empty past 254 groups)
    sig: array = field(default_factory=lambda: array("q"))  # key of `sigs`
    sigs: dict[int, bytes] = field(default_factory=dict)  # marshal of (profiling_name, in, out sizes, in, out dtypes)
    t_first: int | None = None  # the first entry's time_created_ns
    t_last: int | None = None  # the latest time the last entries give: created, discovered started or completed
    timeout_ms: int | None = None  # the collective timeout of its last and pending entries
    pending: dict[int, dict[str, Any]] = field(default_factory=dict)  # entry index -> whole entry (not completed)
    # pg name -> (oldest seq kept, last completed, last started, last enqueued) of its collectives
    progress: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    # group index -> (first seq, signature ids of its collectives in seq order) when they are one
    # entry per seq without gaps (the usual ring buffer); what mismatches are looked for in
    runs: dict[int, tuple[int, array]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.seq)

    @property
    def name(self) -> str:
        return self.where

    @property
    def label(self) -> str:
        return self.where

    def size(self) -> int:
        return self.nbytes

    def signature(self, i: int) -> tuple[str, list, list, list, list]:
        """(profiling_name, input_sizes, output_sizes, input_dtypes, output_dtypes) of entry i."""
        return sig_values(self.sigs[self.sig[i]])

    def entry(self, i: int) -> dict[str, Any]:
        """Entry i as one record (the whole one when it did not complete)."""
        if i in self.pending:
            return self.pending[i]
        name, ins, outs, idt, odt = self.signature(i)
        g = self.groups[self.pg[i]]
        return {"pg": g[0], "pg_desc": g[1], "collective_seq_id": self.seq[i], "profiling_name": name,
                "state": STATES[self.state[i]], "is_p2p": bool(self.p2p[i]), "input_sizes": ins,
                "output_sizes": outs, "input_dtypes": idt, "output_dtypes": odt, "frames": []}

    @property
    def entries(self) -> list[dict[str, Any]]:
        return [self.entry(i) for i in range(len(self))]

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "where": self.where, "version": self.version, "nccl_version": self.nccl_version,
                "pg_config": self.pg_config, "pg_status": self.pg_status, "entries": self.entries,
                "problems": self.problems}


def sig_values(blob: bytes) -> tuple[str, list, list, list, list]:
    name, ins, outs, idt, odt = marshal.loads(blob)
    return name, _plain_sizes(ins), _plain_sizes(outs), _plain_texts(idt), _plain_texts(odt)


def _plain_sizes(v: Any) -> list[list[int]]:
    return [list(s) for s in v] if v else []


def _plain_texts(v: Any) -> list[str]:
    return list(v) if v else []


def signature_blob(name: str, ins: Any, outs: Any, idt: Any, odt: Any) -> bytes:
    """The one encoding of a signature, equal bytes for equal values whatever read them:
    marshal version 2 writes no references and no interning marks (later versions'
    bytes depend on how many references an object has)."""
    return marshal.dumps((name, _plain_sizes(ins), _plain_sizes(outs), _plain_texts(idt), _plain_texts(odt)), 2)


# ---- values of untrusted types -----------------------------------------------------------------


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
_INT64 = 1 << 63


def _int(v: Any) -> int | None:
    if type(v) is int:
        return v if -_INT64 <= v < _INT64 else None
    if isinstance(v, int) and not isinstance(v, bool):
        return _int(int(v))
    if isinstance(v, str) and _INT_TEXT.fullmatch(v):
        return _int(int(v))
    return None


def _ranks(text: Any) -> list[int] | None:
    """pg_config `ranks`: PyTorch writes the list as a string ("[0, 1, 2]"); a list is accepted too."""
    if _is_list(text):
        vals = [_int(x) for x in text]
        return [v for v in vals if v is not None] or None
    if isinstance(text, str):
        vals = [int(x) for x in re.findall(r"-?\d{1,18}", text)]
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


def _frames(raw: Any) -> list[dict[str, Any]]:
    out = []
    for f in raw[:MAX_FRAMES] if _is_list(raw) else ():
        if isinstance(f, dict):
            out.append({"name": _text(f.get("name")), "filename": _text(f.get("filename")),
                        "line": _int(f.get("line"))})
    return out


def _is_p2p_name(name: str) -> bool:
    return name.split(":", 1)[-1].split(" ")[0] in ("send", "recv")


# ---- one entry at a time (any shape) ---------------------------------------------------------


def _entry(raw: Any, i: int, budget: _Budget) -> tuple[dict[str, Any] | None, str | None]:
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
    if raw.get("retired") is True:
        state = "completed"
    pg = raw.get("process_group")
    if _is_list(pg) and len(pg) >= 1:
        pg_name = pg[0] if type(pg[0]) is str else _text(pg[0])
        pg_desc = "" if len(pg) < 2 else pg[1] if type(pg[1]) is str else _text(pg[1])
    elif _int(raw.get("pg_id")) is not None:
        pg_name, pg_desc = str(_int(raw.get("pg_id"))), ""
    else:
        return None, f"entries[{i}] names no process group (process_group / pg_id)"
    is_p2p = raw.get("is_p2p")
    if not isinstance(is_p2p, bool):
        is_p2p = _is_p2p_name(name)
    where = "entries"
    e = {"pg": pg_name, "pg_desc": pg_desc, "collective_seq_id": seq, "profiling_name": name,
         "state": state, "is_p2p": is_p2p,
         "input_sizes": _sizes(raw.get("input_sizes"), budget, where),
         "output_sizes": _sizes(raw.get("output_sizes"), budget, where),
         "input_dtypes": _texts(raw.get("input_dtypes"), budget, where),
         "output_dtypes": _texts(raw.get("output_dtypes"), budget, where),
         "frames": _frames(raw.get("frames")) if state != "completed" else []}
    if state != "completed":  # what only the record of a pending entry shows
        e.update(record_id=_int(raw.get("record_id")), p2p_seq_id=_int(raw.get("p2p_seq_id")),
                 time_created_ns=_int(raw.get("time_created_ns")))
    return e, None


def _times(raw: dict[str, Any]) -> list[int]:
    return [t for t in (_int(raw.get(k)) for k in _TIME_KEYS) if t is not None]


_TIME_KEYS = ("time_created_ns", "time_discovered_started_ns", "time_discovered_completed_ns")
LAST_TIMES = 64  # the last entries read for the latest time a dump gives (besides the pending ones)


def _fill_from_entries(d: FRDump, raw_entries: list, budget: _Budget) -> list[int]:
    """The columns of `d` from entries of any shape, one at a time (the slow path);
    returns the indexes in `raw_entries` of the entries kept."""
    groups: dict[tuple[str, str], int] = {}
    pg, seq, sig = [], [], []
    states = bytearray()
    p2p = bytearray()
    blobs: dict[bytes, int] = {}
    kept: list[int] = []
    skipped = 0
    for i, raw in enumerate(raw_entries):
        e, problem = _entry(raw, i, budget)
        if e is None:
            skipped += 1
            if skipped <= MAX_PROBLEMS:
                d.problems.append(problem or f"entries[{i}] skipped")
            continue
        g = groups.setdefault((e["pg"], e["pg_desc"]), len(groups))
        lid = _int(raw.get("pg_id"))
        if lid is not None:
            d.local_ids.setdefault(lid, g)
        if e["state"] != "completed":
            d.pending[len(seq)] = e
        pg.append(g)
        seq.append(e["collective_seq_id"])
        sig.append(blobs.setdefault(signature_blob(e["profiling_name"], e["input_sizes"], e["output_sizes"],
                                                   e["input_dtypes"], e["output_dtypes"]), len(blobs)))
        states.append(_STATE_CODE[e["state"]])
        p2p.append(1 if e["is_p2p"] else 0)
        kept.append(i)
    if skipped > MAX_PROBLEMS:
        d.problems.append(f"and {skipped - MAX_PROBLEMS} more entries skipped")
    d.groups = list(groups)
    d.pg, d.seq, d.sig = array("q", pg), array("q", seq), array("q", sig)
    d.state, d.p2p = bytes(states), bytes(p2p)
    d.sigs = {v: k for k, v in blobs.items()}
    return kept


# ---- all entries at once (the usual shape) ---------------------------------------------------------

# each key read from every entry in one C-speed pass; the others only of pending and last entries
_SEQ, _STATE, _PG, _P2P, _NAME = (itemgetter(k) for k in ("collective_seq_id", "state", "process_group", "is_p2p",
                                                         "profiling_name"))
_SIG_KEYS = ("profiling_name", "input_sizes", "output_sizes", "input_dtypes", "output_dtypes")
_SIG = itemgetter(*_SIG_KEYS)
_NOT_COMPLETED = re.compile(b"[^%c]" % COMPLETED)
MAX_SIG_BYTES = 64 << 20  # an entry's op, sizes and dtypes marshal into ~100 bytes; a dump's, at most this


def _column(raw: list, get: itemgetter, key: str) -> list:
    try:
        return list(map(get, raw))
    except KeyError:  # an older dump without this key in some entry
        return list(map(methodcaller("get", key), raw))


def _signature_ids(raw: list, budget: _Budget) -> tuple[array, dict[int, bytes]] | None:
    """Each entry's signature id and the signatures by id (`signature_blob`), or None when
    one is not the usual shape.  The entries' (op, sizes, dtypes) are marshalled as they
    are, in one pass: equal values give equal bytes (the encoding may differ between
    equal values, which only costs a second look), so each *distinct* one is checked and
    encoded once, and the values it holds are spent from the budget once per entry that
    has it (a list the memo shares across entries is counted each time, as if copied)."""
    try:
        rows = list(map(_SIG, raw))
    except KeyError:  # an older dump without sizes or dtypes in some entry
        rows = [tuple(map(e.get, _SIG_KEYS)) for e in raw]
    ids: dict[bytes, int] = {}
    raw_ids = array("q")
    put, dumps, total = raw_ids.append, marshal.dumps, 0
    try:
        for n, b in enumerate(map(dumps, rows)):  # marshal's own references keep a shared list small
            total += len(b)
            if total > MAX_SIG_BYTES:
                return None
            put(ids.setdefault(b, n))
    except ValueError:  # nested too deeply, or a value marshal cannot write
        return None
    sigs: dict[int, bytes] = {}
    canonical: dict[bytes, int] = {}
    remap: dict[int, int] = {}
    uses = Counter(raw_ids)
    for b, k in ids.items():
        got = _checked_signature(marshal.loads(b), budget, uses[k])
        if got is None:
            return None
        remap[k] = canonical.setdefault(got, k)
        sigs.setdefault(remap[k], got)
    if any(k != v for k, v in remap.items()):
        raw_ids = array("q", map(remap.__getitem__, raw_ids))
    return raw_ids, sigs


def _checked_signature(v: tuple, budget: _Budget, uses: int) -> bytes | None:
    """The canonical blob of one distinct (op, sizes, dtypes), its values spent `uses`
    times; None when it is not a name, lists of lists of ints and lists of texts."""
    name, ins, outs, idt, odt = v
    if type(name) is not str or not name:
        return None
    seen = 0
    for s in (ins, outs):
        if s is None:
            continue
        if type(s) not in (list, tuple) or not set(map(type, s)) <= {list, tuple}:
            return None
        seen += len(s) + sum(map(len, s))
    for t in (idt, odt):
        if t is None:
            continue
        if type(t) not in (list, tuple):
            return None
        seen += len(t)
    budget.spend(seen * uses, "entries")  # before the leaves are looked at: a shared list is a bomb
    for s in (ins, outs):
        if s and not set(map(type, chain.from_iterable(s))) <= {int}:
            return None
    for t in (idt, odt):
        if t and (not set(map(type, t)) <= {str} or "" in t):
            return None
    return signature_blob(name, ins, outs, idt, odt)


def _columns_fast(d: FRDump, raw: list, budget: _Budget) -> bool:
    """Fill the columns of `d` with C-speed passes when every entry has the usual shape;
    False (the columns may be half filled) when one does not."""
    if not raw:
        return True
    if set(map(type, raw)) != {dict}:
        return False
    budget.spend(len(raw), "entries")
    try:
        seq, states, pgs = list(map(_SEQ, raw)), list(map(_STATE, raw)), list(map(_PG, raw))
    except KeyError:
        return False
    if set(map(type, seq)) != {int}:
        return False
    try:
        seqs = array("q", seq)
        codes = bytes(map(_STATE_CODE.__getitem__, states))
    except (OverflowError, KeyError, TypeError):
        return False
    # process_group: (name, desc) or (name,) of texts, checked before anything is hashed
    kinds = set(map(type, pgs))
    if not kinds <= {tuple, list} or not set(map(len, pgs)) <= {1, 2} \
            or set(map(type, chain.from_iterable(pgs))) != {str}:
        return False
    firsts: dict[tuple, int] = {}  # process_group -> its first entry's index
    first = list(map(firsts.setdefault, pgs if kinds == {tuple} else map(tuple, pgs), range(len(pgs))))
    groups: dict[tuple[str, str], int] = {}
    remap = {i: groups.setdefault((k[0], k[1] if len(k) > 1 else ""), len(groups)) for k, i in firsts.items()}
    pg = array("B", bytes(map(remap.__getitem__, first))) if len(groups) < 255 else \
        array("q", map(remap.__getitem__, first))
    is_p2p = _column(raw, _P2P, "is_p2p")
    kinds = set(map(type, is_p2p))
    if not kinds <= {bool, _NONE}:
        return False
    if _NONE in kinds:  # an older dump: told by the op's name
        names = _column(raw, _NAME, "profiling_name")
        if set(map(type, names)) != {str}:
            return False
        is_p2p = [_is_p2p_name(n) if v is None else v for v, n in zip(is_p2p, names)]
    got = _signature_ids(raw, budget)
    if got is None:
        return False
    # pending entries: not completed, unless retired
    pend = [m.start() for m in _NOT_COMPLETED.finditer(codes)]
    if pend:
        retired = [raw[i].get("retired") for i in pend]
        if not set(map(type, retired)) <= {bool, _NONE}:
            return False
        if True in retired:
            fixed = bytearray(codes)
            for i, r in zip(pend, retired):
                if r is True:
                    fixed[i] = COMPLETED
            codes = bytes(fixed)
            pend = [i for i, r in zip(pend, retired) if r is not True]
    d.groups = list(groups)
    d.pg = pg
    d.seq = seqs
    d.sig, d.sigs = got
    d.state, d.p2p = codes, bytes(is_p2p)
    for i in pend:
        e, _ = _entry(raw[i], i, budget)
        d.pending[i] = e  # the usual shape: never None
    return True


def _header_from_entries(d: FRDump, raw: list, kept: list[int]) -> None:
    """Local pg ids, first and last time, and timeout, from the few entries that tell them:
    the first of each group, the pending ones and the last `LAST_TIMES`."""
    if not kept:
        return
    pgb = d.pg
    firsts = [pgb.index(g) for g in range(len(d.groups))]  # every group has an entry
    look = sorted({*firsts, *d.pending, *range(max(0, len(kept) - LAST_TIMES), len(kept))})
    times: list[int] = []
    timeout = None
    for k in look:
        r = raw[kept[k]]
        lid = _int(r.get("pg_id"))
        if lid is not None:
            d.local_ids.setdefault(lid, pgb[k])
        times += _times(r)
        t = _int(r.get("timeout_ms"))
        if t is not None:
            timeout = t if timeout is None else max(timeout, t)
    first = _int(raw[kept[0]].get("time_created_ns"))
    d.t_first = first if first is not None else (min(times) if times else None)
    d.t_last = max(times) if times else None
    d.timeout_ms = timeout


_PLUS1 = bytes(range(1, 256)) + b"\x00"


def group_mask(coll: bytes, g: int) -> bytes:
    """Per entry 1 where `coll` (`FRDump.coll`) holds a collective of group index g, else 0 (C speed)."""
    return coll.translate(bytes(g + 1) + b"\x01" + bytes(254 - g))


def _progress(d: FRDump) -> None:
    """Per process group: the oldest collective kept, the last completed, started and
    enqueued.  From the entries: a group's collectives run in order on its stream, so
    everything before its first pending entry completed (and so did what the ring
    buffer dropped, older than its oldest entry); then `pg_status` through the local pg
    ids, which may know more.  Also `coll` and `runs` (one pass per group, at C speed)."""
    n_groups = len(d.groups)
    if n_groups < 255:  # group index + 1 of each collective, 0 of each p2p op
        kind = (d.pg.tobytes() if d.pg.typecode == "B" else bytes(iter(d.pg))).translate(_PLUS1)
        if 1 in d.p2p:
            kind = bytes(map(mul, kind, map((1).__xor__, d.p2p)))
        d.coll = kind
    out: dict[str, list[int]] = {}
    pend_by_group: dict[int, list[int]] = {}
    for i in sorted(d.pending):
        if not d.p2p[i]:
            pend_by_group.setdefault(d.pg[i], []).append(i)
    if d.coll:
        present = [g for g in range(n_groups) if g + 1 in d.coll]
        masks = {g: group_mask(d.coll, g) for g in present}
        seqs_of = {g: array("q", compress(d.seq, masks[g])) for g in present}
    else:  # many groups: one sort, not a pass per group
        coll = compress(range(len(d)), map((0).__eq__, d.p2p)) if 1 in d.p2p else range(len(d))
        idx = {g: list(i) for g, i in groupby(sorted(coll, key=d.pg.__getitem__), key=d.pg.__getitem__)}
        seqs_of = {g: array("q", map(d.seq.__getitem__, i)) for g, i in idx.items()}
    for g, seqs in seqs_of.items():
        first, n = seqs[0], len(seqs)
        if seqs[-1] - first == n - 1 and seqs == array("q", range(first, first + n)):
            # one entry per seq, no gaps (the usual ring buffer): what mismatches are looked for in
            sigs = compress(d.sig, masks[g]) if d.coll else map(d.sig.__getitem__, idx[g])
            d.runs[g] = (first, array("q", sigs))
        pend = pend_by_group.get(g, [])
        if d.coll:  # the first entry's, unless a pending one is older; the last entry's
            oldest = min(first, min((d.seq[i] for i in pend), default=first))
            enq = max(seqs[-1], first)
        else:
            oldest, enq = min(seqs), max(seqs)
        done = min(d.seq[i] for i in pend) - 1 if pend else enq
        started = max([done] + [d.seq[i] for i in pend if d.state[i] == STARTED])
        done = max(done, oldest - 1)
        out[d.groups[g][0]] = [oldest, done, max(started, done), max(enq, started, done)]
    names = {i: g[0] for i, g in enumerate(d.groups)}
    for pid, st in d.pg_status.items():
        lid = _int(pid)
        g = d.local_ids.get(lid) if lid is not None else None
        name = names[g] if g is not None else (pid if pid in out or pid in d.pg_config else None)
        if name is None:
            continue
        a = out.setdefault(name, [0, 0, 0, 0])
        a[1] = max(a[1], st.get("last_completed_collective", 0))
        a[2] = max(a[2], st.get("last_started_collective", 0), a[1])
        a[3] = max(a[3], st.get("last_enqueued_collective", 0), a[2])
    d.progress = {k: (v[0], v[1], v[2], v[3]) for k, v in out.items()}


def parse_dump_json(obj: Any, where: str, rank: int | None = None, nbytes: int = 0) -> FRDump:
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
    d = FRDump(rank=rank, where=where, nbytes=nbytes)
    d.version = _text(obj.get("version")) or None
    d.nccl_version = _text(obj.get("nccl_version", obj.get("comm_lib_version"))) or None
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
    entries = list(entries)
    if _columns_fast(d, entries, budget):
        kept = range(len(entries))
    else:
        d.pending = {}
        kept = _fill_from_entries(d, entries, budget)
    _header_from_entries(d, entries, list(kept))
    _progress(d)
    return d


# ---- files and records -------------------------------------------------------------------------

_RANK_SUFFIX = re.compile(r"(\d+)(?:\.(?:json|pkl|pickle))?$")


def rank_from_name(name: str) -> int | None:
    """`nccl_trace_rank_3`, `nccl_trace_rank_3.json`, `trace_12.pkl` -> the rank."""
    m = _RANK_SUFFIX.search(Path(name).name)
    return int(m.group(1)[-9:]) if m else None


def decode_dump_bytes(data: bytes, where: str, walk: bool = True) -> Any:
    """A dump file's bytes as plain values: a pickle (`fr_pickle`; `walk=False` only where
    the address space is capped) or JSON (first non-blank byte `{` or `[`)."""
    check_size(len(data), where)
    head = data.lstrip()[:1]
    if head in (b"{", b"["):
        try:
            return json_loads(data.decode("utf-8", "replace"), MAX_JSON_VALUES, "the JSON dump")
        except TooManyValues as e:
            raise FRDumpError(where, str(e)) from None
        except json.JSONDecodeError as e:
            raise FRDumpError(where, f"not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})", e.pos,
                              e.lineno, e.colno) from None
        except RecursionError:
            raise FRDumpError(where, "JSON nests too deeply") from None
    if not data:
        raise FRDumpError(where, "empty file", 0)
    return safe_unpickle(data, where) if walk else load_refusing(data, where)


def parse_dump_bytes(data: bytes, where: str, rank: int | None = None, walk: bool = True) -> FRDump:
    """A dump file's bytes: a pickle (first byte 0x80) or JSON."""
    return parse_dump_json(decode_dump_bytes(data, where, walk), where, rank, len(data))


def read_bounded(path: Path, where: str) -> bytes:
    """A dump file's bytes, refused past `MAX_DUMP_BYTES` (by its size, then by what was read)."""
    try:
        check_size(path.stat().st_size, where)
        with open(path, "rb") as f:
            data = f.read(MAX_DUMP_BYTES + 1)
    except OSError as e:
        raise FRDumpError(where, f"cannot read: {e.strerror or e}") from None
    check_size(len(data), where)
    return data


def read_dump_file(path: Path, label: str | None = None, walk: bool = True) -> FRDump:
    where = label or str(path)
    return parse_dump_bytes(read_bounded(path, where), where, rank_from_name(path.name), walk)


def observation_from_record(rec: Any, where: str) -> FRDump:
    """`{"kind": "flight_recorder", "rank": N, "dump": {...}}` (observations.jsonl, the
    Service payload, a Blueprint connector) -> the FRDump a Session ingests; FRDumpError
    if unusable."""
    if not isinstance(rec, dict):
        raise FRDumpError(where, "a flight-recorder record is an object")
    rank = _int(rec.get("rank"))
    if rank is None:
        raise FRDumpError(where, "a flight-recorder record needs an integer `rank`")
    if "dump" not in rec:
        raise FRDumpError(where, "a flight-recorder record needs the `dump` object")
    return parse_dump_json(rec["dump"], where, rank)


def ingestable(items: Iterable[Any]) -> list[FRDump]:
    """The dumps among observations (what `Session.ingest` keeps as data)."""
    return [o for o in items if isinstance(o, FRDump)]
