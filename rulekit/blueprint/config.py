"""Blueprint configuration: a folder of TOML files -> a validated `BlueprintConfig`.

Files (read in name order, merged):
    [blueprint]  rules = ["dir", ...]  (rule folders on top of the bundled rules; default: the
                 project file's, rulekit.rules.project), bundled = true | false
    [[context]]  type = "static" | "slurm" | "kueue" | "pkg.module:Class", ...
    [[logs]]     type = "local" | "loki" | "kubernetes" | "pkg.module:Class", ...
    [[metrics]]  type = "prometheus" | "pkg.module:Class", ...
    [fleet]      the fleet policy (`rulekit.blueprint.fleet_policy`; defaults in
                 rulekit/data/fleet_policy.toml); a later file's keys override an earlier's
Every problem is a Diagnostic with file:line:col (RK601 syntax, RK602 schema,
RK603 a file the config names); all are collected, never only the first.
Connectors validate their own tables through a `Section`.  Builds connector
objects; does not run them.
"""
from __future__ import annotations

import importlib
import tomllib
from dataclasses import field
from pathlib import Path
from typing import Any

from rulekit.rules.records import dataclass
from rulekit.blueprint.limits import CONNECTOR_DEADLINE_S
from rulekit.diagnostics import Diagnostic, RulekitError, Span
from rulekit.rules.toml_frontend import Locator, Region, toml_error_span

KINDS = ("context", "logs", "metrics")
TOP_KEYS = {"blueprint", "fleet", *KINDS}
BLUEPRINT_KEYS = {"rules", "name", "bundled"}
_TYPE_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "table"}


class Section:
    """One config table with its location: typed accessors that record located errors."""

    def __init__(self, table: dict, region: Region | None, loc: Locator, path: Path, diags: list[Diagnostic],
                 what: str):
        self.table, self.region, self.loc, self.path, self.diags, self.what = table, region, loc, path, diags, what
        self.used: set[str] = {"type", "name"}

    @property
    def base(self) -> Path:
        return self.path.parent

    def span(self, key: str | None = None) -> Span:
        if key is None:
            return self.loc.header(self.region) if self.region else Span(str(self.path), 1, 1)
        return self.loc.key(self.region, key)

    def error(self, msg: str, key: str | None = None, code: str = "RK602") -> None:
        self.diags.append(Diagnostic(code, msg, self.span(key)))

    def get(self, key: str, typ: type | tuple, default: Any = None, required: bool = False) -> Any:
        self.used.add(key)
        if key not in self.table:
            if required:
                self.error(f"{self.what} is missing the required key `{key}`")
            return default
        v = self.table[key]
        types = typ if isinstance(typ, tuple) else (typ,)
        ok = isinstance(v, types) and not (isinstance(v, bool) and bool not in types)
        if float in types and isinstance(v, int) and not isinstance(v, bool):
            ok = True
        if not ok:
            names = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types)
            self.error(f"`{key}` in {self.what} must be a {names}, not {_TYPE_NAMES.get(type(v), type(v).__name__)}", key)
            return default
        return v

    def duration(self, key: str, default: str) -> float:
        """A duration key (seconds, or "90s", "5m", "1h") in seconds; a bad value is
        reported at the key and the default is used."""
        from rulekit.blueprint.model import parse_duration

        try:
            return parse_duration(self.get(key, (str, int, float), default))
        except ValueError as e:
            self.error(str(e), key)
            return parse_duration(default)

    def size(self, key: str, default: int) -> int:
        """A size key (bytes, or "64MiB", "1GiB") in bytes; a bad value is reported at
        the key and the default is used."""
        from rulekit.blueprint.limits import parse_size

        v = self.get(key, (str, int), None)
        if v is None:
            return default
        try:
            return parse_size(v)
        except ValueError as e:
            self.error(str(e), key)
            return default

    def str_list(self, key: str, default: tuple = (), required: bool = False) -> tuple[str, ...]:
        v = self.get(key, (str, list), None, required)
        if v is None:
            return default
        if isinstance(v, str):
            return (v,)
        if not all(isinstance(x, str) for x in v):
            self.error(f"`{key}` in {self.what} must be a string or a list of strings", key)
            return default
        return tuple(v)

    def subs(self, key: str, required: bool = False) -> list["Section"]:
        """The `[[<this>.key]]` tables inside this one."""
        self.used.add(key)
        v = self.table.get(key)
        if v is None:
            if required:
                self.error(f"{self.what} needs at least one `[[{self._dotted()}.{key}]]` table")
            return []
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            self.error(f"`{key}` in {self.what} must be an array of tables `[[{self._dotted()}.{key}]]`", key)
            return []
        regions = self.loc.tables(f"{self._dotted()}.{key}", self.region) if self.region else []
        out = []
        for i, t in enumerate(v):
            r = regions[i] if i < len(regions) else self.region
            out.append(Section(t, r, self.loc, self.path, self.diags, f"[[{self._dotted()}.{key}]] #{i + 1}"))
        return out

    def _dotted(self) -> str:
        return self.what.split("]]")[0].strip("[")

    def file(self, key: str, required: bool = False) -> Path | None:
        v = self.get(key, str, None, required)
        if v is None:
            return None
        p = (self.base / v) if not Path(v).is_absolute() else Path(v)
        if not p.exists():
            self.diags.append(Diagnostic("RK603", f"`{key}` names {v!r}, which does not exist (looked in {p})",
                                         self.loc.value(self.region, key) if self.region else self.span()))
        return p

    def check_unknown(self, allowed: set[str]) -> None:
        for k in self.table:
            if k not in allowed and k not in self.used:
                self.error(f"unknown key `{k}` in {self.what}; known keys: {', '.join(sorted(allowed | self.used))}", k)


@dataclass
class BlueprintConfig:
    files: list[Path] = field(default_factory=list)
    rules: list[Path] = field(default_factory=list)
    bundled: bool | None = None  # [blueprint] bundled: the bundled rules under `rules` (None: the project file's say)
    contexts: list[Any] = field(default_factory=list)
    logs: list[Any] = field(default_factory=list)
    metrics: list[Any] = field(default_factory=list)
    fleet: Any = None  # FleetPolicy (the defaults when no file has a [fleet] section)


def _resolve_type(type_name: str, kind: str, sec: Section) -> Any:
    from rulekit.blueprint.connectors import BUILTIN

    builtin = BUILTIN[kind]
    if type_name in builtin:
        mod_name, cls_name = builtin[type_name]
    elif ":" in type_name:
        mod_name, cls_name = type_name.split(":", 1)
    else:
        sec.error(f"unknown {kind} connector type {type_name!r}; built in: {', '.join(sorted(builtin))} "
                  f"(or `package.module:Class` for your own)", "type")
        return None
    try:
        return getattr(importlib.import_module(mod_name), cls_name)
    except (ImportError, AttributeError) as e:
        sec.error(f"cannot load connector {type_name!r}: {e}", "type")
        return None


def load_config(folder: str | Path, need_context: bool = True) -> BlueprintConfig:
    """Read and validate every `*.toml` in `folder` (or one file); raises RulekitError with all problems.
    `need_context=False`: a config without `[[context]]` is fine (reading only its `[fleet]` policy)."""
    root = Path(folder)
    if root.is_file():
        files = [root]
    elif root.is_dir():
        files = sorted(p for p in root.glob("*.toml") if p.is_file())
    else:
        raise RulekitError(Diagnostic("RK603", f"config folder `{root}` does not exist", Span(str(root), 1, 1)))
    if not files:
        raise RulekitError(Diagnostic("RK603", f"`{root}` holds no *.toml config file", Span(str(root), 1, 1)))
    from rulekit.blueprint.fleet_policy import FleetPolicy

    cfg = BlueprintConfig(files=files, fleet=FleetPolicy.defaults())
    diags: list[Diagnostic] = []
    for path in files:
        _load_file(path, cfg, diags)
    if not diags and not cfg.contexts and need_context:
        diags.append(Diagnostic("RK602", "no `[[context]]` connector is configured: nothing says which jobs to attribute",
                                Span(str(files[0]), 1, 1)))
    if diags:
        raise RulekitError(sorted(diags, key=lambda d: d.sort_key()))
    return cfg


def _load_file(path: Path, cfg: BlueprintConfig, diags: list[Diagnostic]) -> None:
    text = path.read_bytes().decode("utf-8", "replace")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e).split(" (at ")[0]
        diags.append(Diagnostic("RK601", f"TOML syntax error: {msg}", toml_error_span(e, text, str(path))))
        return
    loc = Locator(text, str(path))
    top = Section(data, loc.top(), loc, path, diags, "the config file")
    top.used = set()
    for k in data:
        if k not in TOP_KEYS:
            top.error(f"unknown top-level key `{k}`; known: {', '.join(sorted(TOP_KEYS))}", k)
    bp = data.get("blueprint")
    if bp is not None:
        regs = loc.tables("blueprint")
        sec = Section(bp if isinstance(bp, dict) else {}, regs[0] if regs else None, loc, path, diags, "[blueprint]")
        for r in sec.str_list("rules"):
            p = (path.parent / r) if not Path(r).is_absolute() else Path(r)
            if not p.exists():
                diags.append(Diagnostic("RK603", f"rule folder {r!r} does not exist (looked in {p})", sec.span("rules")))
            cfg.rules.append(p)
        sec.get("name", str)
        cfg.bundled = sec.get("bundled", bool, None)
        sec.check_unknown(BLUEPRINT_KEYS)
    fl = data.get("fleet")
    if fl is not None:
        from rulekit.blueprint.fleet_policy import FleetPolicy

        regs = loc.tables("fleet")
        if not isinstance(fl, dict):
            top.error("`fleet` must be a table: write `[fleet]`", "fleet")
        else:
            cfg.fleet = FleetPolicy.from_section(Section(fl, regs[0] if regs else None, loc, path, diags, "[fleet]"),
                                                 cfg.fleet)
    for kind in KINDS:
        items = data.get(kind)
        if items is None:
            continue
        if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
            top.error(f"`{kind}` must be an array of tables: write `[[{kind}]]`", kind)
            continue
        regions = loc.tables(kind)
        for i, table in enumerate(items):
            sec = Section(table, regions[i] if i < len(regions) else None, loc, path, diags, f"[[{kind}]] #{i + 1}")
            type_name = sec.get("type", str, None, required=True)
            if type_name is None:
                continue
            cls = _resolve_type(type_name, kind, sec)
            if cls is None:
                continue
            before = len(diags)
            name = sec.get("name", str, None) or f"{type_name}" + (f"#{i + 1}" if i else "")
            try:
                conn = cls.from_config(sec)
            except (ValueError, TypeError) as e:
                sec.error(f"{type_name}: {e}")
                continue
            # every connector runs under a deadline (per attempt for logs and metrics, per run for a context)
            conn.deadline_s = sec.duration("deadline", f"{CONNECTOR_DEADLINE_S:g}s")
            if conn.deadline_s <= 0:
                sec.error("`deadline` must be more than 0 seconds", "deadline")
            sec.check_unknown(getattr(cls, "KEYS", set()) | {"deadline"})
            if len(diags) == before:
                conn.name = name
                getattr(cfg, "contexts" if kind == "context" else kind).append(conn)
