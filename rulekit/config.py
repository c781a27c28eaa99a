"""Global attribution configuration set by `setup_rules()`: the node-domain
resolver, the node-name mapping and the ignored hostname prefixes.  Pure data
plus the one function that turns a printed host name into a job node name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping


@dataclass(frozen=True)
class GlobalConfig:
    # node name -> failure domain (e.g. the NVLink rack a GB200 node sits in); reported with bad nodes
    node_domain_resolver: Callable[[str], str | None] | None = None
    # printed host name -> canonical node name (e.g. "node0003-ib0" -> "node0003")
    node_name_mapping: Mapping[str, str] = field(default_factory=dict)
    # host names starting with these are never nodes (e.g. "localhost", "login")
    ignored_hostname_prefixes: tuple[str, ...] = ()

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
