"""JSON Schemas (draft 2020-12) for TOML rule files and `*.test.toml` job-test files,
generated from the TOML front-end's key sets and the rule model's vocabularies
(outcomes, emit types, test expectations), so editors (Even Better TOML, taplo)
validate and complete rule files as the loader reads them.

`rules_schema()` / `job_tests_schema()` build them; every key the front-end
accepts must have a type here, or generation fails (and the test with it).
The shipped copies under `rulekit/data/` are these, written by
`rulekit schema --write`.  Pure: no I/O besides `write_shipped()`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rulekit.rules import toml_frontend as fe
from rulekit.rules.catalog import ENTRY_SYMPTOM_FIELDS
from rulekit.rules.model import ACTIONS, BLAMES, EMIT_TYPES, OUTCOMES

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "data"
SHIPPED = {"rules": "rulekit-rules.schema.json", "tests": "rulekit-tests.schema.json"}
BASE_ID = "https://rulekit.invalid/schema/"

STR: dict[str, Any] = {"type": "string"}
STR_LIST: dict[str, Any] = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
SCALAR: dict[str, Any] = {"type": ["string", "integer", "number", "boolean"]}


def _d(schema: dict[str, Any], text: str) -> dict[str, Any]:
    return {**schema, "description": text}


def _table(keys: set[str], types: dict[str, dict[str, Any]], what: str, required: tuple[str, ...] = (),
           extra: dict[str, Any] | bool = False) -> dict[str, Any]:
    missing = sorted(keys - set(types))
    if missing:
        raise KeyError(f"the schema has no type for key(s) {missing} of {what}: add them to rulekit/rules/schema.py")
    unknown = sorted(set(types) - keys)
    if unknown:
        raise KeyError(f"the schema types key(s) {unknown} that {what} does not accept")
    out: dict[str, Any] = {"type": "object", "description": what,
                           "properties": {k: types[k] for k in sorted(keys)}, "additionalProperties": extra}
    if required:
        out["required"] = list(required)
    return out


def _emit(templated: bool = False) -> dict[str, Any]:
    symptom = _d(STR, "the symptom the event carries; `{group}` placeholders take named groups" if not templated
                 else "the symptom; `{param}` placeholders take member parameters and named groups")
    return _table(fe.EMIT_KEYS, {
        "type": _d({"enum": list(EMIT_TYPES)}, "event type (default bad_node)"),
        "symptom": symptom,
        "node": _d(STR, "the node the event blames; a `{group}` of the pattern, default the line's node"),
        "fields": _d({"type": "object", "additionalProperties": SCALAR}, "extra data fields (templates allowed)"),
    }, "what a match emits")


def _line_test() -> dict[str, Any]:
    return _table(fe.TEST_KEYS, {
        "line": _d(STR, "the log line to try (required)"),
        "expect": _d({"enum": sorted(fe.EXPECT_VALUES)}, "what the line must give (default: the emit type)"),
        "symptom": _d(STR, "the symptom the match must carry"),
        "node": _d(STR, "the node the match must blame"),
        "captures": _d({"type": "object", "additionalProperties": SCALAR}, "named groups the match must capture"),
        "source": _d(STR, "the observation source of the line (applog, syslog, ...)"),
        "format": _d(STR, "the observation format of the line"),
    }, "an inline test line", required=("line",))


def _tests() -> dict[str, Any]:
    t = _line_test()
    return {"anyOf": [t, {"type": "array", "items": t}], "description": "inline tests: `[[<table>.test]]`"}


_COMMON = {
    "name": _d(STR, "unique rule name"),
    "author": _d(STR, "who owns the rule (default: the file's top-level `author`)"),
    "source": _d(STR_LIST, "observation source(s) the rule reads (applog, syslog, scheduler, ...)"),
    "format": _d(STR_LIST, "observation format(s) the rule reads"),
    "requires": _d(STR_LIST, "rules that must be present"),
    "docs": _d(STR, "what the rule means, shown on hover"),
    "match_re": _d(STR, "RE2 pattern; `(?P<name>...)` groups feed the emit templates"),
}


_BLAME = _d({"enum": list(BLAMES)}, "what the symptom blames (node, link, peer: the node goes in bad_nodes)")
_ACTION = _d({"enum": list(ACTIONS)}, "what a remediation system should do with a blamed node")


def _pick(*keys: str, **more: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {**{k: _COMMON[k] for k in keys}, **more}


def rules_schema() -> dict[str, Any]:
    """The schema of a TOML rule file (`*.toml`, not `*.test.toml`)."""
    symptom = _table(fe.SYMPTOM_KEYS, {
        "name": _d(STR, "the symptom name, e.g. XID-79-GPU_FELL_OFF_BUS"),
        "outcome": _d({"enum": list(OUTCOMES)}, "the outcome this symptom implies"),
        "sub_domain": _d(STR, "a short word: gpu, nvlink, infiniband, nccl, oom, ..."),
        "rank": _d({"type": "integer"}, "priority among competing symptoms (higher wins)"),
        "docs": _d(STR, "what the symptom means"),
        "aliases": _d(STR_LIST, "other names accepted for this symptom"),
        "blame": _BLAME, "action": _ACTION,
    }, "a registered symptom: `[[symptom]]`", required=("name", "outcome", "sub_domain", "rank"))
    outcome_rule = _table(fe.OUTCOME_RULE_KEYS, {
        "prefix": _d(STR, "symptoms starting with this prefix get the outcome below"),
        "outcome": _d({"enum": list(OUTCOMES)}, "the outcome"),
        "sub_domain": _d(STR, "the sub-domain"),
        "rank": _d({"type": "integer"}, "the rank"),
        "blame": _BLAME, "action": _ACTION,
    }, "an outcome rule for a symptom prefix: `[[outcome_rule]]`", required=("prefix",))
    extractor = _table(fe.EXTRACTOR_KEYS, _pick("name", "author", "match_re", "source", "format", "requires", "docs",
                                                emit=_emit(), test=_tests()),
                       "an extractor: one pattern, one emit: `[[extractor]]`", required=("name", "match_re", "emit"))
    template = _table(fe.TEMPLATE_KEYS, _pick("match_re", "source", "format", "requires", "docs", emit=_emit(True)),
                      "the pattern and emit every member fills in (`{param}` placeholders)", required=("match_re",))
    member = {"type": "object", "description": "one member: `name` plus the template's parameters",
              "properties": {"name": _d(STR, "member name (the rule is `<family>.<name>`)"),
                             "author": _COMMON["author"], "docs": _COMMON["docs"], "test": _tests()},
              "required": ["name"], "additionalProperties": SCALAR}
    assert set(member["properties"]) == fe.MEMBER_RESERVED, "family member keys changed: update the schema"
    family = _table(fe.FAMILY_KEYS, _pick("name", "author", "source", "format", "requires", "docs", template=template,
                                          member={"type": "array", "items": member, "minItems": 1}),
                    "a family: one template, many members: `[[family]]`", required=("name", "template", "member"))
    entry_props = {"type": _d({"enum": list(EMIT_TYPES)}, "override the emit type"),
                   "symptom": _d(STR, "override the symptom"), "node": _d(STR, "override the node")}
    assert set(entry_props) == fe.ENTRY_EMIT_OVERRIDES, "catalog entry overrides changed: update the schema"
    entry_symptom = {"outcome": _d({"enum": list(OUTCOMES)}, "register the entry's symptom with this outcome"),
                     "sub_domain": _d(STR, "the registered symptom's sub-domain"),
                     "rank": _d({"type": "integer"}, "the registered symptom's rank"),
                     "blame": _BLAME, "action": _ACTION}
    assert set(entry_symptom) == ENTRY_SYMPTOM_FIELDS, "catalog entry symptom fields changed: update the schema"
    entry = {"anyOf": [_d(STR, "the entry's name"),
                       {"type": "object", "properties": {**entry_props, **entry_symptom}, "additionalProperties": SCALAR,
                        "description": "lookup fields for the emit templates, and emit overrides"}]}
    catalog = _table(fe.CATALOG_KEYS, _pick("name", "author", "match_re", "source", "format", "requires", "docs",
                                            key=_d(STR_LIST,
                                                  "the named group whose value selects the entry; or a list: "
                                                  "the first filled by the entry's key, each other by the "
                                                  "entry's field of that name (its branch dropped when the "
                                                  "entry has none)"),
                                            emit=_emit(True), test=_tests(),
                                            entries={"type": "object", "additionalProperties": entry,
                                                     "description": "key value -> entry"}),
                     "a catalog: one pattern, a table of entries by key: `[[catalog]]`",
                     required=("name", "match_re", "key", "entries"))
    samples = _d({"type": "array", "items": {"type": "array", "items": {"type": "number"}, "minItems": 2,
                                             "maxItems": 2}},
                 "[[unix seconds, value], ...]")
    labels = _d({"type": "object", "additionalProperties": STR}, "label values the series must have")
    duration = _d({"type": ["string", "number"]}, "a duration: seconds, or \"90s\", \"5m\", \"1h\"")
    metric_test = _table(fe.METRIC_TEST_KEYS, {
        "samples": samples, "labels": labels,
        "expect": _d({"enum": sorted(fe.EXPECT_VALUES)}, "what the series must give (default: the emit type)"),
        "symptom": _d(STR, "the symptom the event must carry"),
        "node": _d(STR, "the node of the test series"),
    }, "an inline metric test: `[[metric_rule.test]]`", required=("samples",))
    metric_rule = _table(fe.METRIC_RULE_KEYS, _pick(
        "name", "author", "requires", "docs",
        metric=_d(STR, "the metric (series) name"), labels=labels,
        when=_d(STR, "AGGREGATE OP NUMBER: aggregates value, rate, increase; e.g. `rate > 10`"),
        window=duration, emit=_emit(),
        test={"anyOf": [metric_test, {"type": "array", "items": metric_test}],
              "description": "inline tests: `[[metric_rule.test]]`"},
        **{"for": duration}),
        "a metric rule: a condition on a node's series, held for a duration: `[[metric_rule]]`",
        required=("name", "metric", "when", "emit"))
    arrays = {"symptom": symptom, "outcome_rule": outcome_rule, "extractor": extractor, "family": family,
              "catalog": catalog, "metric_rule": metric_rule}
    top = {"author": _d(STR, "default author of every rule in the file")}
    top.update({k: {"type": "array", "items": v, "description": v["description"]} for k, v in arrays.items()})
    body = _table(fe.TOP_KEYS, top, "a rulekit TOML rule file")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": BASE_ID + SHIPPED["rules"],
            "title": "rulekit rule file", **{k: v for k, v in body.items() if k != "description"},
            "description": "A rulekit TOML rule file: symptoms, outcome rules, extractors, families, catalogs "
                           "(see docs/rule-authoring.md)."}


def job_tests_schema() -> dict[str, Any]:
    """The schema of a `*.test.toml` file of job-level test cases."""
    expect = _table(fe.EXPECT_KEYS, {
        "outcome": _d({"enum": list(OUTCOMES)}, "the expected outcome"),
        "sub_domain": _d(STR, "the expected sub-domain"),
        "root_cause": _d({"anyOf": [STR, {"type": "object", "properties": {"symptom": STR}}]},
                         "the expected root-cause symptom"),
        "root_node": _d(STR, "the node of the root cause"),
        "bad_nodes": _d({"type": "array", "items": {"anyOf": [STR, {"type": "object", "properties": {"node": STR},
                                                                  "required": ["node"]}]}},
                        "exactly these bad nodes"),
        "symptoms": _d({"type": "array", "items": STR}, "symptoms that must be present"),
        "absent_symptoms": _d({"type": "array", "items": STR}, "symptoms that must not be present"),
        "ambiguous": _d({"type": "boolean"}, "whether the result is ambiguous"),
        "affected_nodes": _d({"type": "array", "items": STR},
                             "exactly these affected nodes (where a workload/environment error surfaced)"),
        "interesting_nodes": _d({"type": "array", "items": STR}, "exactly these interesting nodes"),
        "interesting_symptoms": _d({"type": "array", "items": STR}, "symptoms that must be on interesting nodes"),
        "confidence": _d({"enum": ["high", "medium", "low"]}, "the expected confidence"),
    }, "what the attribution must give")
    observation = _table(fe.OBS_KEYS, {
        "source": _d(STR, "applog, syslog, scheduler, ..."),
        "node": _d(STR, "the node every line belongs to"),
        "lines": _d(STR_LIST, "the log lines (a multi-line string or an array)"),
        "format": _d(STR, "the observation format (default text)"),
    }, "evidence lines: `[[case.observation]]`", required=("source", "lines"))
    case = _table(fe.CASE_KEYS, {
        "name": _d(STR, "the test case's name"),
        "job": _d({"type": "object"}, "the job record (id, state, nodes, ... as in job.toml's [job])"),
        "observation": {"type": "array", "items": observation},
        "metric": {"type": "array", "items": _table(fe.CASE_METRIC_KEYS, {
            "node": _d(STR, "the node of the series"), "name": _d(STR, "the metric name"),
            "labels": _d({"type": "object", "additionalProperties": STR}, "the series' labels"),
            "samples": _d({"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
                          "[[unix seconds, value], ...]"),
        }, "a metric series: `[[case.metric]]`", required=("name", "samples"))},
        "expect": expect,
    }, "a job-level test case: `[[case]]`", required=("name", "expect"))
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": BASE_ID + SHIPPED["tests"],
            "title": "rulekit job-test file", "type": "object",
            "properties": {"case": {"type": "array", "items": case}}, "additionalProperties": False,
            "description": "A rulekit `*.test.toml` file: job-level test cases."}


def schema(kind: str = "rules") -> dict[str, Any]:
    return {"rules": rules_schema, "tests": job_tests_schema}[kind]()


def dumps(kind: str = "rules") -> str:
    return json.dumps(schema(kind), indent=2, sort_keys=False) + "\n"


def write_shipped(folder: Path = SCHEMA_DIR) -> list[Path]:
    """Write the shipped schema files (what `rulekit schema --write` does in the repo)."""
    out = []
    for kind, name in SHIPPED.items():
        p = folder / name
        p.write_text(dumps(kind), encoding="utf-8")
        out.append(p)
    return out
