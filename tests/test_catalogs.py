"""Every row of every catalog, in every spelling its tool prints: each catalog of the
bundled corpus is a data file with one row per authoritative entry (docs/catalogs.md);
this test walks the rows.  For each row and each spelling whose fields the row has, a
line built from the spelling's template must be read by that row's rule (through the
corpus's own scan plan, with every other rule present) and by no other row of the
catalog; the row's symptom must be registered with an outcome, sub_domain, rank,
blame and action; the near misses must be read by no row.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

from rulekit.rules.loader import load_corpus


@dataclass
class Spelling:
    needs: tuple[str, ...]  # the row fields the template uses (the row key is `key`)
    template: str
    source: str = "applog"


@dataclass
class Catalog:
    name: str
    spellings: list[Spelling]
    near_misses: list[tuple[str, str]] = field(default_factory=list)  # (line, source)


CATALOGS = [
    Catalog("CudaError", [
        Spelling(("message",), "[rank6]: torch.AcceleratorError: CUDA error: {message}"),
        Spelling(("message",), "[rank6]: RuntimeError: CUDA error: {message}\r"),
        Spelling(("message",), "node0005:9001:9002 [3] enqueue.cc:1556 NCCL WARN Cuda failure {key} '{message}'"),
        Spelling(("message",), "node0005:9001:9002 [3] misc/strongstream.cc:52 NCCL WARN Cuda failure '{message}'"),
        Spelling(("message",), "RuntimeError: cuda runtime error (39) : {message} at /pytorch/aten/src/THC/x.cu:85"),
        Spelling(("message",), "RuntimeError: Triton Error [CUDA]: {message}"),
        Spelling(("runtime",), "cupy_backends.cuda.api.runtime.CUDARuntimeError: {runtime}: whatever it says"),
        Spelling(("runtime",), "merge_sort: failed to synchronize: {runtime}"),
        Spelling(("driver",), "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to launch CUDA kernel: {driver}"),
        Spelling(("driver",), "E external/xla/stream_executor/cuda/cuda_event.cc:33] failed to query event: {driver}"),
        Spelling((), "node0005:9001:9002 [3] enqueue.cc:1556 NCCL WARN Cuda failure {key} ''"),
        Spelling((), "cudaGetDeviceCount returned {key}"),
    ], near_misses=[
        ("[rank6]: CUDA kernel errors might be asynchronously reported at some other API call", "applog"),
        ("For debugging consider passing CUDA_LAUNCH_BLOCKING=1", "applog"),
        ("CUDA error: invalid argumentation of the config", "applog"),
        ("Cuda failure 7000 'x'", "applog"),
        ("cudaErrorInvalidValueType is not a CUDA code", "applog"),
        ("logging system not yet initialized, buffering", "applog"),
        ("nvidia-container-cli: initialization error: nvml error: driver not loaded", "syslog"),
        ("CUDA_ERROR_IS_NOT_A_CODE happened", "applog"),
        ("job exited with code=1", "applog"),
    ]),
]


@pytest.fixture(scope="module")
def engine():
    return load_corpus(None).engine


def _rows(engine, catalog: str) -> list:
    rows = [r for r in engine.extractors if r.origin == f"catalog:{catalog}"]
    assert rows, f"no catalog {catalog} in the bundled corpus"
    return rows


def _read_by(engine, line: str, source: str) -> set[str]:
    plan = engine.scan_plan(source, "text")
    return {plan.rules[h[2]].name for h in plan.scanner.scan((line + "\n").encode())}


def _cases():
    engine = load_corpus(None).engine
    for cat in CATALOGS:
        for rule in _rows(engine, cat.name):
            fields = dict(rule.lookup)
            fields["key"] = rule.catalog_key
            spelled = 0
            for sp in cat.spellings:
                if all(fields.get(f) for f in sp.needs):
                    spelled += 1
                    yield pytest.param(cat.name, rule.name, sp.template.format(**fields), sp.source,
                                       id=f"{rule.name}:{sp.template[:24]}")
            assert spelled, f"{rule.name}: no spelling covers it"


@pytest.mark.parametrize("catalog, rule, line, source", list(_cases()))
def test_every_row_reads_its_line(engine, catalog, rule, line, source):
    got = _read_by(engine, line, source)
    assert rule in got, f"{rule} does not read {line!r}"
    others = {g for g in got if g.startswith(catalog + "[") and g != rule}
    assert not others, f"{line!r} is read by other rows of {catalog}: {others}"


@pytest.mark.parametrize("catalog", [c.name for c in CATALOGS])
def test_every_row_has_a_registered_symptom_with_blame_and_action(engine, catalog):
    from rulekit.rules.model import ACTIONS, BLAMES, OUTCOMES

    for rule in _rows(engine, catalog):
        symptom = rule.emit.symptom
        assert symptom and "{" not in symptom, rule.name
        info = engine.registry.info(symptom)
        assert info.outcome in OUTCOMES and info.sub_domain and isinstance(info.rank, int), rule.name
        assert info.blame in BLAMES and info.action in ACTIONS, rule.name


@pytest.mark.parametrize("catalog", [c.name for c in CATALOGS])
def test_near_misses_are_read_by_no_row(engine, catalog):
    cat = next(c for c in CATALOGS if c.name == catalog)
    for line, source in cat.near_misses:
        got = {g for g in _read_by(engine, line, source) if g.startswith(catalog + "[")}
        assert not got, f"{line!r} is read by {got}"


def test_the_source_table_is_named_at_the_top_of_every_catalog_file():
    from rulekit.rules.loader import bundled_rules_path

    for path in sorted(bundled_rules_path().glob("catalog_*.toml")):
        head = path.read_text().split("[[", 1)[0]
        assert re.search(r"(?m)^# Source", head), f"{path.name} does not name its source table"
