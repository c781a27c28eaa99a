"""Generate the TextMate grammars of the rulekit DSL (`syntaxes/*.json`).

The regexes are written here as Python raw strings (readable, no JSON double
escaping) and dumped to `syntaxes/rulekit.tmLanguage.json` and
`syntaxes/rulekit-markdown-injection.json`, which are committed: the extension
build needs only Node.  `tests/test_vscode_extension.py` fails when the
committed JSON differs from what this script prints, so edit the grammar here
and rerun `python scripts/gen_grammar.py`.  No I/O besides writing those files.

The DSL itself is `grammar/rulekit.lark` (language reference: grammar/README.md);
this grammar only colours it, so it is lexical with a little context (what
follows `emit`, `=>`, `demote`, `when`, ...), never a parser.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

# ---- shared regex pieces ---------------------------------------------------------
NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*(?:\[[^\]\s\"]*\])?"
NB = r"(?<![A-Za-z0-9_.\-])"          # no name character before
NA = r"(?![A-Za-z0-9_.\-\[])"         # no name character after
STR = r'"(?:[^"\\]|\\.)*"'
STRATA_FILTER = ("EARLY", "MID", "STANDARD", "LATE")
STRATA_REFINER = ("SCRUB", "FINAL", "POST_OUTCOME")
EVENT_TYPES = ("bad_node", "interesting_node", "bad_peers", "data")
OUTCOMES = ("hardware", "network", "application", "infrastructure", "cancelled", "timeout", "success", "unknown")
CLAUSE_KEYWORDS = ("author", "outcome", "sub_domain", "rank", "blame", "action", "docs", "aliases", "source", "format", "requires",
                   "uses", "python", "match", "key", "emit", "node", "fields", "test", "with", "captures", "on",
                   "same", "anywhere", "for", "each", "at", "least", "add", "them", "any", "all", "prefer", "over",
                   "and", "set", "gather", "from", "unique", "job", "observe", "expect", "metric", "labels",
                   "window", "series")


DECL_KEYWORDS = ("symptom", "prefix", "extractor", "family", "catalog", "filter", "refiner", "collector", "metric_rule",
                 "case",
                 "member", "entry")
ACTION_KEYWORDS = ("demote", "discard", "promote")
CONDITION_KEYWORDS = ("when", "unless")
# every word the DSL reserves (tests/test_vscode_extension.py compares it with rulekit.dsl.fmt.KEYWORDS)
ALL_KEYWORDS = frozenset(DECL_KEYWORDS + ACTION_KEYWORDS + CONDITION_KEYWORDS + CLAUSE_KEYWORDS
                         + ("nothing", "true", "false"))


def alt(words) -> str:
    return "(?:" + "|".join(words) + ")"


def kw(words) -> str:
    return NB + "(" + alt(words) + ")" + NA


def word_or_string() -> str:
    """NAME or "STRING" (5 groups); see `word_captures`."""
    return rf"(?:({NAME})|((\")((?:[^\"\\]|\\.)*)(\")))"


def word_captures(first: int, scope: str, content_patterns=None) -> dict:
    """Captures for `word_or_string` starting at group `first` (5 groups)."""
    content = {"name": scope}
    if content_patterns:
        content["patterns"] = content_patterns
    return {
        str(first): {"name": scope},
        str(first + 1): {"name": "string.quoted.double.rulekit"},
        str(first + 2): {"name": "punctuation.definition.string.begin.rulekit"},
        str(first + 3): content,
        str(first + 4): {"name": "punctuation.definition.string.end.rulekit"},
    }


def list_of(scope: str) -> dict:
    """Patterns that scope a comma list of NAMEs / strings (used inside a capture)."""
    return {"patterns": [
        {"include": "#comma"},
        {"match": rf"({NAME})", "name": scope},
        {"match": rf"(\")((?:[^\"\\]|\\.)*)(\")",
         "name": "string.quoted.double.rulekit",
         "captures": {"1": {"name": "punctuation.definition.string.begin.rulekit"},
                      "2": {"name": scope, "patterns": [{"include": "#string-escape"}]},
                      "3": {"name": "punctuation.definition.string.end.rulekit"}}},
    ]}


LIST = rf"(?:{NAME}|{STR})(?:\s*,\s*(?:{NAME}|{STR}))*"
# a top-level keyword in column 1 ends an unclosed block, as the parser's error recovery does
TOP_LEVEL = r"(?=^(?:author|symptom|prefix|extractor|family|catalog|filter|refiner|collector|case)\b)"

# clauses that end at a keyword of the next part of the clause, a brace, a comment or the line end
def until(words) -> str:
    return r"(?=" + NB + alt(words) + NA + r"|[{}#]|$)"


repository: dict = {
    # ---- comments --------------------------------------------------------------
    "comment": {
        "begin": r"(#)",
        "beginCaptures": {"1": {"name": "punctuation.definition.comment.rulekit"}},
        "end": r"$",
        "name": "comment.line.number-sign.rulekit",
        "patterns": [{
            "match": r"\b(rulekit):\s*(ignore)(\[)([^\]]*)(\])",
            "captures": {"1": {"name": "keyword.other.directive.rulekit"},
                         "2": {"name": "keyword.other.directive.ignore.rulekit"},
                         "3": {"name": "punctuation.definition.directive.begin.rulekit"},
                         "4": {"name": "constant.other.diagnostic-code.rulekit"},
                         "5": {"name": "punctuation.definition.directive.end.rulekit"}},
        }],
    },
    # ---- declaration headers ---------------------------------------------------
    "symptom-decl": {
        "match": NB + r"(symptom|prefix)\s+" + word_or_string(),
        "captures": {"1": {"name": "keyword.declaration.symptom.rulekit"},
                     **word_captures(2, "entity.name.type.symptom.rulekit",
                                     [{"include": "#string-escape"}])},
    },
    "rule-decl": {
        "match": NB + r"(extractor|family|catalog|collector)\s+" + word_or_string(),
        "captures": {"1": {"name": "keyword.declaration.rule.rulekit"},
                     **word_captures(2, "entity.name.function.rule.rulekit", [{"include": "#string-escape"}])},
    },
    "priority-decl": {
        "patterns": [
            {
                "match": NB + r"(filter)\s+" + word_or_string() + r"(?:\s+(?:(" + alt(STRATA_FILTER) + ")" + NA
                + rf"|({NAME}))(?:\s*(\+)\s*(-?[0-9]+))?)?",
                "captures": {"1": {"name": "keyword.declaration.rule.rulekit"},
                             **word_captures(2, "entity.name.function.rule.rulekit", [{"include": "#string-escape"}]),
                             "7": {"name": "constant.language.stratum.rulekit"},
                             "8": {"name": "invalid.illegal.stratum.rulekit"},
                             "9": {"name": "keyword.operator.arithmetic.rulekit"},
                             "10": {"name": "constant.numeric.integer.rulekit"}},
            },
            {
                "match": NB + r"(refiner)\s+" + word_or_string() + r"(?:\s+(?:(" + alt(STRATA_REFINER) + ")" + NA
                + rf"|({NAME}))(?:\s*(\+)\s*(-?[0-9]+))?)?",
                "captures": {"1": {"name": "keyword.declaration.rule.rulekit"},
                             **word_captures(2, "entity.name.function.rule.rulekit", [{"include": "#string-escape"}]),
                             "7": {"name": "constant.language.stratum.rulekit"},
                             "8": {"name": "invalid.illegal.stratum.rulekit"},
                             "9": {"name": "keyword.operator.arithmetic.rulekit"},
                             "10": {"name": "constant.numeric.integer.rulekit"}},
            },
        ]
    },
    "member-decl": {
        "match": NB + r"(member)\s+" + word_or_string(),
        "captures": {"1": {"name": "keyword.declaration.member.rulekit"},
                     **word_captures(2, "entity.name.function.member.rulekit", [{"include": "#string-escape"}])},
    },
    "entry-decl": {
        "match": NB + r"(entry)\s+(?:(-?[0-9]+)" + NA + r"|((\")((?:[^\"\\]|\\.)*)(\")))",
        "captures": {"1": {"name": "keyword.declaration.entry.rulekit"},
                     "2": {"name": "constant.numeric.integer.key.rulekit"},
                     "3": {"name": "string.quoted.double.rulekit"},
                     "4": {"name": "punctuation.definition.string.begin.rulekit"},
                     "5": {"name": "entity.name.tag.entry-key.rulekit"},
                     "6": {"name": "punctuation.definition.string.end.rulekit"}},
    },
    # ---- job-level test cases: `case "name" { job {...} observe ... { "..." } expect {...} }`
    "case-decl": {
        "patterns": [
            {
                "begin": NB + r"(case)\s+((\")((?:[^\"\\]|\\.)*)(\"))\s*(\{)",
                "beginCaptures": {"1": {"name": "keyword.declaration.case.rulekit"},
                                  "2": {"name": "string.quoted.double.rulekit"},
                                  "3": {"name": "punctuation.definition.string.begin.rulekit"},
                                  "4": {"name": "entity.name.section.case.rulekit",
                                        "patterns": [{"include": "#string-escape"}]},
                                  "5": {"name": "punctuation.definition.string.end.rulekit"},
                                  "6": {"name": "punctuation.section.block.begin.rulekit"}},
                "end": r"\}|" + TOP_LEVEL,
                "endCaptures": {"0": {"name": "punctuation.section.block.end.rulekit"}},
                "name": "meta.case.rulekit",
                "patterns": [{"include": "#case-body"}],
            },
            {   # header with its brace on a later line
                "match": NB + r"(case)\s+((\")((?:[^\"\\]|\\.)*)(\"))",
                "captures": {"1": {"name": "keyword.declaration.case.rulekit"},
                             "2": {"name": "string.quoted.double.rulekit"},
                             "3": {"name": "punctuation.definition.string.begin.rulekit"},
                             "4": {"name": "entity.name.section.case.rulekit"},
                             "5": {"name": "punctuation.definition.string.end.rulekit"}},
            },
        ]
    },
    "case-body": {
        "patterns": [
            {"include": "#comment"},
            {"include": "#observe"},
            {"include": "#case-keyword"},
            {"begin": r"\{", "end": r"\}|" + TOP_LEVEL, "name": "meta.table.rulekit",
             "beginCaptures": {"0": {"name": "punctuation.section.block.begin.rulekit"}},
             "endCaptures": {"0": {"name": "punctuation.section.block.end.rulekit"}},
             "patterns": [{"include": "#case-body"}]},
            {"include": "#values"},
        ]
    },
    "case-keyword": {
        "match": kw(("job", "expect")),
        "name": "keyword.other.case.rulekit",
    },
    "observe": {
        "begin": NB + r"(observe)\s+" + word_or_string()
        + r"(?:\s+(on)\s+((\")((?:[^\"\\]|\\.)*)(\")))?(?:\s+(format)\s+" + word_or_string() + r")?\s*(\{)",
        "beginCaptures": {"1": {"name": "keyword.other.observe.rulekit"},
                          **word_captures(2, "support.constant.source.rulekit"),
                          "7": {"name": "keyword.other.clause.rulekit"},
                          "8": {"name": "string.quoted.double.rulekit"},
                          "9": {"name": "punctuation.definition.string.begin.rulekit"},
                          "10": {"name": "entity.name.tag.node.rulekit"},
                          "11": {"name": "punctuation.definition.string.end.rulekit"},
                          "12": {"name": "keyword.other.clause.rulekit"},
                          **word_captures(13, "support.constant.format.rulekit"),
                          "18": {"name": "punctuation.section.block.begin.rulekit"}},
        "end": r"\}|" + TOP_LEVEL,
        "endCaptures": {"0": {"name": "punctuation.section.block.end.rulekit"}},
        "name": "meta.observation.rulekit",
        "patterns": [
            {"include": "#comment"},
            {"begin": r"\"", "end": r"\"|$", "name": "string.quoted.double.log-line.rulekit",
             "beginCaptures": {"0": {"name": "punctuation.definition.string.begin.rulekit"}},
             "endCaptures": {"0": {"name": "punctuation.definition.string.end.rulekit"}},
             "patterns": [{"include": "#string-escape"}]},
        ],
    },
    # ---- inline tests: `test "line" with {...} => TYPE "SYMPTOM" node "n" captures {...}`
    "test-clause": {
        "begin": NB + r"(test)" + NA,
        "beginCaptures": {"1": {"name": "keyword.other.test.rulekit"}},
        "end": r"$",
        "name": "meta.test.rulekit",
        "patterns": [
            {"include": "#comment"},
            {"include": "#pair-key"},
            {
                "match": r"(=>)\s*(?:" + NB + r"(nothing)" + NA + r"|(?:(" + alt(EVENT_TYPES) + ")" + NA + rf"|({NAME}))"
                + r"(?:\s+((\")((?:[^\"\\]|\\.)*)(\")))?)",
                "captures": {"1": {"name": "keyword.operator.expect.rulekit"},
                             "2": {"name": "constant.language.nothing.rulekit"},
                             "3": {"name": "support.type.event.rulekit"},
                             "4": {"name": "invalid.illegal.event-type.rulekit"},
                             "5": {"name": "string.quoted.double.rulekit"},
                             "6": {"name": "punctuation.definition.string.begin.rulekit"},
                             "7": {"name": "entity.name.type.symptom.rulekit",
                                   "patterns": [{"include": "#string-escape"}]},
                             "8": {"name": "punctuation.definition.string.end.rulekit"}},
            },
            {"match": r"=>", "name": "keyword.operator.expect.rulekit"},
            {"match": kw(("with", "node", "captures")), "name": "keyword.other.clause.rulekit"},
            {"include": "#values"},
        ],
    },
    # ---- clauses with context ----------------------------------------------------
    "emit-clause": {
        "match": NB + r"(emit|add)\s+(?:(" + alt(EVENT_TYPES) + ")" + NA + rf"|({NAME}))"
        + r"(?:\s+((\")((?:[^\"\\]|\\.)*)(\")))?",
        "captures": {"1": {"name": "keyword.other.emit.rulekit"},
                     "2": {"name": "support.type.event.rulekit"},
                     "3": {"name": "invalid.illegal.event-type.rulekit"},
                     "4": {"name": "string.quoted.double.rulekit"},
                     "5": {"name": "punctuation.definition.string.begin.rulekit"},
                     "6": {"name": "entity.name.type.symptom.rulekit", "patterns": [{"include": "#string-inner"}]},
                     "7": {"name": "punctuation.definition.string.end.rulekit"}},
    },
    "outcome-clause": {
        "match": NB + r"(outcome)\s+(?:(" + alt(OUTCOMES) + ")" + NA + rf"|({NAME})" + NA + ")",
        "captures": {"1": {"name": "keyword.other.clause.rulekit"},
                     "2": {"name": "constant.language.outcome.rulekit"},
                     "3": {"name": "invalid.illegal.outcome.rulekit"}},
    },
    "sub-domain-clause": {
        "match": NB + rf"(sub_domain)\s+({NAME})" + NA,
        "captures": {"1": {"name": "keyword.other.clause.rulekit"},
                     "2": {"name": "support.constant.sub-domain.rulekit"}},
    },
    "source-format-clause": {
        "patterns": [
            {"match": NB + rf"(source)\s+({LIST})",
             "captures": {"1": {"name": "keyword.other.clause.rulekit"},
                          "2": list_of("support.constant.source.rulekit")}},
            {"match": NB + rf"(format)\s+({LIST})",
             "captures": {"1": {"name": "keyword.other.clause.rulekit"},
                          "2": list_of("support.constant.format.rulekit")}},
        ]
    },
    "requires-clause": {
        "patterns": [
            {"match": NB + rf"(requires)\s+({LIST})",
             "captures": {"1": {"name": "keyword.other.clause.rulekit"},
                          "2": list_of("variable.function.rule.rulekit")}},
            {"match": NB + rf"(uses)\s+(python)\s+({LIST})",
             "captures": {"1": {"name": "keyword.other.clause.rulekit"},
                          "2": {"name": "keyword.other.clause.rulekit"},
                          "3": list_of("variable.function.rule.rulekit")}},
        ]
    },
    "key-clause": {
        "match": NB + rf"(key)\s+({NAME})" + NA,
        "captures": {"1": {"name": "keyword.other.clause.rulekit"},
                     "2": {"name": "variable.other.capture.rulekit"}},
    },
    "gather-clause": {
        "match": NB + rf"(gather)\s+({LIST})",
        "captures": {"1": {"name": "keyword.other.clause.rulekit"},
                     "2": list_of("variable.other.field.rulekit")},
    },
    # filter / refiner actions and conditions: symptom-pattern lists
    "action": {
        "begin": NB + r"(demote|discard|promote)" + NA,
        "beginCaptures": {"1": {"name": "keyword.control.action.rulekit"}},
        "end": until(("on", "when", "unless", "them")),
        "name": "meta.action.rulekit",
        "patterns": [{"include": "#event-type"}, {"include": "#symptom-pattern"}, {"include": "#comma"}],
    },
    "condition": {
        "begin": NB + r"(when|unless)" + NA,
        "beginCaptures": {"1": {"name": "keyword.control.conditional.rulekit"}},
        "end": until(("on", "anywhere", "demote", "discard", "promote")),
        "name": "meta.condition.rulekit",
        "patterns": [{"match": kw(("any", "all")), "name": "keyword.operator.quantifier.rulekit"},
                     {"include": "#symptom-pattern"}, {"include": "#comma"}],
    },
    # POST_OUTCOME refiners: `when|unless outcome W, ... [and [any|all] "P", ...] set outcome W [sub_domain W]`
    "outcome-when": {
        "match": NB + rf"(when|unless)\s+(outcome)\s+({LIST})",
        "captures": {"1": {"name": "keyword.control.conditional.rulekit"},
                     "2": {"name": "keyword.other.clause.rulekit"},
                     "3": {"patterns": [
                         {"include": "#comma"},
                         {"match": NB + "(" + alt(OUTCOMES) + ")" + NA, "name": "constant.language.outcome.rulekit"},
                         {"match": NB + "(?!(?:and|set)" + NA + ")" + NAME, "name": "invalid.illegal.outcome.rulekit"},
                         {"include": "#string"},
                     ]}},
    },
    "outcome-and": {
        "begin": NB + r"(and)" + NA,
        "beginCaptures": {"1": {"name": "keyword.control.conditional.rulekit"}},
        "end": until(("set",)),
        "name": "meta.condition.rulekit",
        "patterns": [{"match": kw(("any", "all")), "name": "keyword.operator.quantifier.rulekit"},
                     {"include": "#symptom-pattern"}, {"include": "#comma"}],
    },
    "outcome-set": {
        "match": NB + r"(set)\s+(outcome)\s+(?:(" + alt(OUTCOMES) + ")" + NA + rf"|({NAME}))"
        + rf"(?:\s+(sub_domain)\s+({NAME}))?",
        "captures": {"1": {"name": "keyword.control.set.rulekit"},
                     "2": {"name": "keyword.other.clause.rulekit"},
                     "3": {"name": "constant.language.outcome.rulekit"},
                     "4": {"name": "invalid.illegal.outcome.rulekit"},
                     "5": {"name": "keyword.other.clause.rulekit"},
                     "6": {"name": "support.constant.sub-domain.rulekit"}},
    },
    "prefer": {
        "begin": NB + r"(prefer)" + NA,
        "beginCaptures": {"1": {"name": "keyword.control.prefer.rulekit"}},
        "end": r"(?=[{}#])|$",
        "name": "meta.prefer.rulekit",
        "patterns": [{"match": kw(("over",)), "name": "keyword.control.prefer.rulekit"},
                     {"include": "#symptom-pattern"}],
    },
    "from": {
        "begin": NB + r"(from)" + NA,
        "beginCaptures": {"1": {"name": "keyword.other.clause.rulekit"}},
        "end": until(("unique",)),
        "patterns": [{"include": "#event-type"}, {"include": "#symptom-pattern"}, {"include": "#comma"}],
    },
    "per-node": {
        "begin": NB + r"(for)\s+(each)\s+(node)\s+(with)" + NA,
        "beginCaptures": {str(i): {"name": "keyword.control.loop.rulekit"} for i in range(1, 5)},
        "end": r"(?=[{}#])|$",
        "name": "meta.per-node.rulekit",
        "patterns": [{"match": NB + r"(at)\s+(least)" + NA,
                      "captures": {"1": {"name": "keyword.operator.quantifier.rulekit"},
                                   "2": {"name": "keyword.operator.quantifier.rulekit"}}},
                     {"include": "#number"}, {"include": "#event-type"}, {"include": "#symptom-pattern"},
                     {"include": "#comma"}],
    },
    "event-type": {
        "match": NB + "(" + alt(EVENT_TYPES) + ")" + NA,
        "name": "support.type.event.rulekit",
    },
    "symptom-pattern": {
        "begin": r"\"",
        "beginCaptures": {"0": {"name": "punctuation.definition.string.begin.rulekit"}},
        "end": r"\"|$",
        "endCaptures": {"0": {"name": "punctuation.definition.string.end.rulekit"}},
        "name": "string.quoted.double.rulekit",
        "contentName": "entity.name.type.symptom.rulekit",
        "patterns": [{"match": r"\*(?=\")", "name": "keyword.operator.wildcard.rulekit"},
                     {"include": "#string-escape"}],
    },
    # ---- generic keywords (after everything with context) -------------------------
    "keywords": {
        "patterns": [
            {"match": kw(DECL_KEYWORDS), "name": "keyword.declaration.rulekit"},
            {"match": kw(ACTION_KEYWORDS), "name": "keyword.control.action.rulekit"},
            {"match": kw(CONDITION_KEYWORDS), "name": "keyword.control.conditional.rulekit"},
            {"match": kw(("nothing",)), "name": "constant.language.nothing.rulekit"},
            {"match": kw(CLAUSE_KEYWORDS), "name": "keyword.other.clause.rulekit"},
            {"match": kw(STRATA_FILTER + STRATA_REFINER), "name": "constant.language.stratum.rulekit"},
        ]
    },
    # ---- values -----------------------------------------------------------------
    "values": {
        "patterns": [
            {"include": "#pair-key"},
            {"include": "#regex"},
            {"include": "#string"},
            {"include": "#number"},
            {"match": kw(("true", "false")), "name": "constant.language.boolean.rulekit"},
            {"include": "#punctuation"},
        ]
    },
    "pair-key": {
        "match": rf"(?:{NB}({NAME})|((\")((?:[^\"\\]|\\.)*)(\")))\s*(=)(?!>)",
        "captures": {"1": {"name": "variable.other.property.rulekit"},
                     "2": {"name": "string.quoted.double.rulekit"},
                     "3": {"name": "punctuation.definition.string.begin.rulekit"},
                     "4": {"name": "variable.other.property.rulekit"},
                     "5": {"name": "punctuation.definition.string.end.rulekit"},
                     "6": {"name": "keyword.operator.assignment.rulekit"}},
    },
    "number": {
        "patterns": [
            {"match": NB + r"-?[0-9]+\.[0-9]+" + NA, "name": "constant.numeric.float.rulekit"},
            {"match": NB + r"-?[0-9]+" + NA, "name": "constant.numeric.integer.rulekit"},
        ]
    },
    "punctuation": {
        "patterns": [
            {"match": r"\{", "name": "punctuation.section.block.begin.rulekit"},
            {"match": r"\}", "name": "punctuation.section.block.end.rulekit"},
            {"match": r"\[", "name": "punctuation.section.brackets.begin.rulekit"},
            {"match": r"\]", "name": "punctuation.section.brackets.end.rulekit"},
            {"include": "#comma"},
            {"match": r"\+", "name": "keyword.operator.arithmetic.rulekit"},
            {"match": r"=>", "name": "keyword.operator.expect.rulekit"},
        ]
    },
    "comma": {"match": r",", "name": "punctuation.separator.comma.rulekit"},
    "string": {
        "begin": r"\"",
        "beginCaptures": {"0": {"name": "punctuation.definition.string.begin.rulekit"}},
        "end": r"(\")|$",
        "endCaptures": {"1": {"name": "punctuation.definition.string.end.rulekit"}},
        "name": "string.quoted.double.rulekit",
        "patterns": [{"include": "#string-inner"}],
    },
    "string-inner": {
        "patterns": [
            {"include": "#string-escape"},
            {"include": "#template-param"},
            {"match": r"(\{)([A-Za-z_][A-Za-z0-9_]*)(\})",
             "captures": {"1": {"name": "punctuation.definition.placeholder.begin.rulekit"},
                          "2": {"name": "variable.other.placeholder.rulekit"},
                          "3": {"name": "punctuation.definition.placeholder.end.rulekit"}},
             "name": "meta.placeholder.rulekit"},
        ]
    },
    "string-escape": {
        "patterns": [
            {"match": r"\\(?:[ntr0\"\\]|u[0-9a-fA-F]{4})", "name": "constant.character.escape.rulekit"},
            {"match": r"\\.", "name": "constant.character.escape.regexp-kept.rulekit"},
        ]
    },
    "template-param": {
        "match": r"(\$\{)([A-Za-z_][A-Za-z0-9_]*)(\})",
        "name": "meta.template.rulekit",
        "captures": {"1": {"name": "punctuation.definition.template.begin.rulekit"},
                     "2": {"name": "variable.parameter.template.rulekit"},
                     "3": {"name": "punctuation.definition.template.end.rulekit"}},
    },
    # ---- regex literals /.../ (RE2 syntax) ---------------------------------------
    "regex": {
        "patterns": [
            {
                "begin": r"/(?=(?:[^/\\\n]|\\.)+/)",
                "beginCaptures": {"0": {"name": "punctuation.definition.string.begin.regexp.rulekit"}},
                "end": r"/",
                "endCaptures": {"0": {"name": "punctuation.definition.string.end.regexp.rulekit"}},
                "name": "string.regexp.rulekit",
                "patterns": [{"include": "#regexp-inner"}],
            },
            {"match": r"/", "name": "invalid.illegal.unclosed-regex.rulekit"},
        ]
    },
    "regexp-inner": {
        "patterns": [
            {"include": "#template-param"},
            {"match": r"\\/", "name": "constant.character.escape.slash.regexp.rulekit"},
            {"match": r"\\[1-9](?![0-9])|\\k<[^>]*>|\\g<[^>]*>", "name": "invalid.illegal.backreference.regexp.rulekit"},
            {"match": r"\\[dDwWsS]|\\[pP](?:\{\^?[A-Za-z_]+\}|[A-Za-z])",
             "name": "constant.other.character-class.escape.regexp.rulekit"},
            {"match": r"\\[bBAz]", "name": "keyword.control.anchor.regexp.rulekit"},
            {"match": r"\\(?:x\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|[0-7]{1,3}|Q.*?\\E|.)",
             "name": "constant.character.escape.regexp.rulekit"},
            {"match": r"\(\?<?[=!]", "name": "invalid.illegal.lookaround.regexp.rulekit"},
            {"match": r"(\()(\?)([imsU]*(?:-[imsU]+)?)(\))",
             "captures": {"1": {"name": "punctuation.definition.group.regexp.rulekit"},
                          "2": {"name": "punctuation.definition.group.modifier.regexp.rulekit"},
                          "3": {"name": "storage.modifier.flag.regexp.rulekit"},
                          "4": {"name": "punctuation.definition.group.regexp.rulekit"}}},
            {
                "begin": r"(\()(\?P?<)([A-Za-z_][A-Za-z0-9_]*)(>)",
                "beginCaptures": {"1": {"name": "punctuation.definition.group.regexp.rulekit"},
                                  "2": {"name": "punctuation.definition.group.named.regexp.rulekit"},
                                  "3": {"name": "entity.name.tag.named-group.regexp.rulekit"},
                                  "4": {"name": "punctuation.definition.group.named.regexp.rulekit"}},
                "end": r"(\))|(?=/)|$",
                "endCaptures": {"1": {"name": "punctuation.definition.group.regexp.rulekit"}},
                "name": "meta.group.named.regexp.rulekit",
                "patterns": [{"include": "#regexp-inner"}],
            },
            {
                "begin": r"(\()(\?(?:[imsU]*(?:-[imsU]+)?):)?",
                "beginCaptures": {"1": {"name": "punctuation.definition.group.regexp.rulekit"},
                                  "2": {"name": "punctuation.definition.group.no-capture.regexp.rulekit"}},
                "end": r"(\))|(?=/)|$",
                "endCaptures": {"1": {"name": "punctuation.definition.group.regexp.rulekit"}},
                "name": "meta.group.regexp.rulekit",
                "patterns": [{"include": "#regexp-inner"}],
            },
            {"match": r"\)", "name": "invalid.illegal.unbalanced-group.regexp.rulekit"},
            {
                "begin": r"(\[)(\^)?",
                "beginCaptures": {"1": {"name": "punctuation.definition.character-class.begin.regexp.rulekit"},
                                  "2": {"name": "keyword.operator.negation.regexp.rulekit"}},
                "end": r"(\])|(?=/)|$",
                "endCaptures": {"1": {"name": "punctuation.definition.character-class.end.regexp.rulekit"}},
                "name": "constant.other.character-class.set.regexp.rulekit",
                "patterns": [
                    {"match": r"\[:\^?[a-z]+:\]", "name": "constant.other.character-class.posix.regexp.rulekit"},
                    {"match": r"(?:\\.|[^\]\\/])(-)(?:\\.|[^\]\\/])",
                     "captures": {"1": {"name": "keyword.operator.range.regexp.rulekit"}},
                     "name": "constant.other.character-class.range.regexp.rulekit"},
                    {"match": r"\\/", "name": "constant.character.escape.slash.regexp.rulekit"},
                    {"match": r"\\[dDwWsS]", "name": "constant.other.character-class.escape.regexp.rulekit"},
                    {"match": r"\\.", "name": "constant.character.escape.regexp.rulekit"},
                ],
            },
            {"match": r"(?:[*+?]|\{[0-9]+(?:,[0-9]*)?\})\??", "name": "keyword.operator.quantifier.regexp.rulekit"},
            {"match": r"[\^$]", "name": "keyword.control.anchor.regexp.rulekit"},
            {"match": r"\|", "name": "keyword.operator.or.regexp.rulekit"},
            {"match": r"\.", "name": "constant.character.wildcard.regexp.rulekit"},
        ]
    },
}

grammar = {
    "$schema": "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json",
    "name": "rulekit",
    "scopeName": "source.rulekit",
    "fileTypes": ["rule"],
    "comment": "GENERATED by scripts/gen_grammar.py from the DSL in grammar/rulekit.lark; edit the script, not this file.",
    "patterns": [
        {"include": "#comment"},
        {"include": "#case-decl"},
        {"include": "#symptom-decl"},
        {"include": "#rule-decl"},
        {"include": "#priority-decl"},
        {"include": "#member-decl"},
        {"include": "#entry-decl"},
        {"include": "#test-clause"},
        {"include": "#pair-key"},
        {"include": "#emit-clause"},
        {"include": "#outcome-clause"},
        {"include": "#sub-domain-clause"},
        {"include": "#source-format-clause"},
        {"include": "#requires-clause"},
        {"include": "#key-clause"},
        {"include": "#gather-clause"},
        {"include": "#per-node"},
        {"include": "#action"},
        {"include": "#outcome-when"},
        {"include": "#outcome-and"},
        {"include": "#outcome-set"},
        {"include": "#condition"},
        {"include": "#prefer"},
        {"include": "#from"},
        {"include": "#keywords"},
        {"include": "#values"},
    ],
    "repository": repository,
}

injection = {
    "$schema": "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json",
    "scopeName": "markdown.rulekit.codeblock",
    "comment": "GENERATED by scripts/gen_grammar.py: ```rule fenced code blocks in Markdown use source.rulekit.",
    "fileTypes": [],
    "injectionSelector": "L:text.html.markdown",
    "patterns": [{"include": "#rulekit-code-block"}],
    "repository": {
        "rulekit-code-block": {
            "begin": r"(^|\G)(\s*)(`{3,}|~{3,})\s*(?i:(rule|rulekit)(?=\s|$)[^`~]*)$",
            "beginCaptures": {"3": {"name": "punctuation.definition.markdown"},
                              "4": {"name": "fenced_code.block.language.markdown"}},
            "end": r"(^|\G)(\2|\s{0,3})(\3)\s*$",
            "endCaptures": {"3": {"name": "punctuation.definition.markdown"}},
            "name": "markup.fenced_code.block.markdown",
            "patterns": [{
                "begin": r"(^|\G)(\s*)(.*)",
                "while": r"(^|\G)(?!\s*([`~]{3,})\s*$)",
                "contentName": "meta.embedded.block.rulekit",
                "patterns": [{"include": "source.rulekit"}],
            }],
        }
    },
}

OUTPUTS = {
    HERE / "syntaxes" / "rulekit.tmLanguage.json": grammar,
    HERE / "syntaxes" / "rulekit-markdown-injection.json": injection,
}


def render(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, obj in OUTPUTS.items():
        text = render(obj)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if stale:
        print("out of date (run python scripts/gen_grammar.py): " + ", ".join(str(p) for p in stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
