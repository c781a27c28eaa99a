"""Configuration, two kinds.  Core module: must not import anything of rulekit.

`GlobalConfig`: what attribution assumes, set by `setup_rules()`: the node-domain
resolver, the node-name mapping, the ignored hostname prefixes and how far apart two
nodes' clocks may be (`clock_skew_seconds`, docs/time.md).  Pure data plus the one
function that turns a printed host name into a job node name.

`EngineOptions`: the knobs that change how rulekit runs but never what it
concludes -- the cache folder, the scanner backend, the plugin import time limit,
the time budget of one call of a Python rule,
the event store's buffer and spill sizes, the repeat, group and evidence caps,
the processes scanning one large log.
`EngineOptions.from_env()` is the one place the `RULEKIT_*` environment variables
are read; the edges (the CLI, the Service, `rulekit.api`) call it once and pass the
object down (`load_corpus(options=...)` -> `RuleEngine.options` -> `Session`).  A
library caller that builds an engine without options gets `from_env()` too, so
the variables behave as they always did.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping

# the distribution's name on the package index (`pip install rulekit-gpu`); the import package
# and the command are `rulekit` (`rulekit` on the index is an unrelated library)
DISTRIBUTION = "rulekit-gpu"


@dataclass(frozen=True)
class GlobalConfig:
    # node name -> failure domain (e.g. the NVLink rack a GB200 node sits in); reported with bad nodes
    node_domain_resolver: Callable[[str], str | None] | None = None
    # printed host name -> canonical node name (e.g. "node0003-ib0" -> "node0003")
    node_name_mapping: Mapping[str, str] = field(default_factory=dict)
    # host names starting with these are never nodes (e.g. "localhost", "login")
    ignored_hostname_prefixes: tuple[str, ...] = ()
    # two stamps of different logs closer than this (seconds) are not ordered: clock skew between
    # nodes and the resolution of the stamps (a syslog second); rules read it as `context.clock_skew`
    clock_skew_seconds: float = 2.0

    def canonical_node(self, host: str | None) -> str | None:
        """The node name for a printed host name, or None if it is ignored."""
        if not host:
            return None
        host = host.strip()
        if host in self.node_name_mapping:
            return self.node_name_mapping[host]
        short = host.split(".", 1)[0]
        if short in self.node_name_mapping:
            return self.node_name_mapping[short]
        if self.ignored_hostname_prefixes and short.startswith(tuple(self.ignored_hostname_prefixes)):
            return None
        return short

    def node_domain(self, node: str) -> str | None:
        if self.node_domain_resolver is None:
            return None
        try:
            return self.node_domain_resolver(node)
        except Exception:  # a resolver's failure must not fail attribution
            return None


# ---- engine options ----------------------------------------------------------------------

ENV_CACHE_DIR = "RULEKIT_CACHE_DIR"  # a folder; "" disables the cache; unset: $XDG_CACHE_HOME/rulekit or ~/.cache/rulekit
ENV_SCANNER = "RULEKIT_SCANNER"  # naive | re2 | hyperscan | auto (default)
ENV_PLUGIN_TIMEOUT = "RULEKIT_PLUGIN_TIMEOUT"  # seconds > 0 (default 10); anything else: the default
ENV_RULE_TIMEOUT = "RULEKIT_RULE_TIMEOUT"  # seconds > 0 one call of a Python rule may run (default 10)
ENV_SCAN_WORKERS = "RULEKIT_SCAN_WORKERS"  # processes scanning one large log: 0/1 serial, N; unset/other: automatic
SCANNERS = ("auto", "naive", "re2", "hyperscan")

DEFAULT_PLUGIN_TIMEOUT = 10.0
DEFAULT_CLOCK_SKEW_SECONDS = GlobalConfig.clock_skew_seconds  # (docs/time.md)
DEFAULT_RULE_TIMEOUT = 10.0  # one call of a Python rule at attribution (rulekit.rules.containment)
DEFAULT_BUFFER_SIZE = 2000  # events buffered before one batched insert
DEFAULT_SPILL_ROWS = 250_000  # an in-memory store with more rows than this moves to a private file,
DEFAULT_SPILL_BYTES = 8 << 20  # or one with more bytes of database pages (bounds its RSS)
DEFAULT_REPEAT_CAP = 32  # events kept per (rule, event type, symptom, node, captures); later repeats are aggregated
DEFAULT_GROUP_CAP = 256  # events kept per (rule, event type, symptom, node) whatever the captures; the rest aggregated
DEFAULT_EVIDENCE_PER_KEY = 3  # evidence items per (event type, symptom, node) in a result
DEFAULT_EVIDENCE_MAX = 400  # evidence items in a result


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The cache folder the environment asks for (not created here), or None when disabled."""
    env = os.environ if environ is None else environ
    base = env.get(ENV_CACHE_DIR)
    if base is None:
        base = os.path.join(env.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rulekit")
    return Path(base) if base else None


def _timeout(raw: str | None, default: float = DEFAULT_PLUGIN_TIMEOUT) -> float:
    try:
        v = float((raw or "").strip())
    except ValueError:
        return default
    return v if v > 0 else default


def _count(raw: str | None) -> int | None:
    """A worker count >= 0, or None (unset or not a count: automatic)."""
    try:
        n = int((raw or "").strip())
    except ValueError:
        return None
    return n if n >= 0 else None


@dataclass(frozen=True)
class EngineOptions:
    cache_dir: Path | None = field(default_factory=default_cache_dir)
    scanner: str = "auto"
    plugin_timeout: float = DEFAULT_PLUGIN_TIMEOUT
    rule_timeout: float = DEFAULT_RULE_TIMEOUT
    buffer_size: int = DEFAULT_BUFFER_SIZE
    spill_rows: int = DEFAULT_SPILL_ROWS
    spill_bytes: int = DEFAULT_SPILL_BYTES
    repeat_cap: int = DEFAULT_REPEAT_CAP
    group_cap: int = DEFAULT_GROUP_CAP
    scan_workers: int | None = None  # None: automatic (rulekit.extract.parallel.scan_workers)
    max_scan_workers: int | None = None  # a cap on the automatic choice (`-j N`: N processes in all); None: none
    evidence_per_key: int = DEFAULT_EVIDENCE_PER_KEY
    evidence_max: int = DEFAULT_EVIDENCE_MAX

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "EngineOptions":
        """The options the environment sets (the process environment by default)."""
        env = os.environ if environ is None else environ
        return cls(cache_dir=default_cache_dir(env),
                   scanner=env.get(ENV_SCANNER, "auto").strip().lower() or "auto",
                   plugin_timeout=_timeout(env.get(ENV_PLUGIN_TIMEOUT)),
                   rule_timeout=_timeout(env.get(ENV_RULE_TIMEOUT), DEFAULT_RULE_TIMEOUT),
                   scan_workers=_count(env.get(ENV_SCAN_WORKERS)))

    def with_(self, **changes: object) -> "EngineOptions":
        return replace(self, **changes)  # type: ignore[arg-type]
