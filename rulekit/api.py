"""The library entry point of the spec's "Initialization order": `setup_rules()`.

Module-level state mirrors the spec (`initialized`, the engine and the symptom
registry); everything else in rulekit takes an engine explicitly.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping, Sequence

from rulekit.config import EngineOptions, GlobalConfig
from rulekit.rules.corpus import RuleEngine
from rulekit.rules.loader import RuleLoader, bundled_rules_path
from rulekit.rules.project import choose_corpus
from rulekit.rules.registry import SymptomRegistry

initialized = False
_rules_engine: RuleEngine | None = None
_symptom_registry: SymptomRegistry | None = None
_config: GlobalConfig | None = None


def setup_rules(paths: Sequence[str | Path] | None = None, *, force: bool = False,
                node_domain_resolver: Callable[[str], str | None] | None = None,
                node_name_mapping: Mapping[str, str] | None = None,
                ignored_hostname_prefixes: Sequence[str] | None = None,
                clock_skew_seconds: float | None = None, bundled: bool | None = None,
                project: bool = False) -> RuleEngine:
    """Load, validate and freeze the rules once (idempotent unless force=True).

    paths: rule folders or files (default: the bundled rules).  A library call loads
    exactly the paths it names unless `bundled=True` (the bundled rules underneath, as
    the command line does).  project=True: the corpus the command line would load here
    (`rulekit.toml` or `[tool.rulekit]` found from the current folder upward, its
    `rules` and `bundled`, through `rulekit.rules.project.choose_corpus`).
    Raises RulekitError with every error diagnostic when the corpus is invalid."""
    global initialized, _rules_engine, _symptom_registry, _config
    # 1. idempotency
    if initialized and not force and _rules_engine is not None:
        return _rules_engine
    # 2. rule paths
    if project:
        rule_paths = list(choose_corpus(paths, bundled=bundled).load_paths)
    elif paths:
        rule_paths = list(choose_corpus(paths, bundled=bool(bundled), find=False).load_paths)
    else:
        rule_paths = [bundled_rules_path()]
    # 3. global config
    initialized = True
    _config = GlobalConfig(node_domain_resolver=node_domain_resolver, node_name_mapping=dict(node_name_mapping or {}),
                           ignored_hostname_prefixes=tuple(ignored_hostname_prefixes or ()),
                           **({} if clock_skew_seconds is None else {"clock_skew_seconds": float(clock_skew_seconds)}))
    # 4. load all rule files, build the immutable engine
    try:
        engine = RuleLoader(_config, options=EngineOptions.from_env()).load_all(rule_paths).build(strict=True)
    except Exception:
        initialized = False
        raise
    assert engine is not None
    # 5. store the engine
    _rules_engine = engine
    # 6. the symptom registry, compiled once from the loaded declarations
    _symptom_registry = engine.registry
    return engine


def get_engine() -> RuleEngine:
    return _rules_engine if _rules_engine is not None else setup_rules()


def symptom_registry() -> SymptomRegistry:
    get_engine()
    assert _symptom_registry is not None
    return _symptom_registry
