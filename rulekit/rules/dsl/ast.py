"""The typed AST of the rule DSL: plain dataclasses, a `Span` on every node.

Produced by `rulekit.rules.dsl.parser` from Lark's parse tree (no Lark type ever
appears here), consumed by the compiler (-> rule model), the formatter and the
language server.  No parsing, no semantics, no I/O.
"""
from __future__ import annotations

from dataclasses import field
from typing import Union

from rulekit.rules.records import dataclass
from rulekit.diagnostics import Span


@dataclass
class Node:
    span: Span


# ---- values --------------------------------------------------------------------

@dataclass
class Str(Node):
    value: str


@dataclass
class Name(Node):
    value: str


@dataclass
class Regex(Node):
    value: str  # the pattern with `\/` unescaped
    content: Span  # span of the text between the slashes
    quoted: bool = False  # written as a "string" (a pattern with `\/` or a newline)


@dataclass
class Int(Node):
    value: int


@dataclass
class Float(Node):
    value: float


@dataclass
class Bool(Node):
    value: bool


@dataclass
class ListV(Node):
    items: list["Value"]


@dataclass
class Pair(Node):
    key: Union[Name, Str]
    value: "Value"


@dataclass
class Table(Node):
    pairs: list[Pair]

    def get(self, key: str) -> "Value | None":
        for p in self.pairs:
            if p.key.value == key:
                return p.value
        return None


Value = Union[Str, Regex, Int, Float, Bool, ListV, Table]
Word = Union[Name, Str]


def plain(v: "Value | Name") -> object:
    """A value node as plain Python data (str, int, float, bool, list, dict)."""
    if isinstance(v, ListV):
        return [plain(x) for x in v.items]
    if isinstance(v, Table):
        return {p.key.value: plain(p.value) for p in v.pairs}
    return v.value


# ---- clauses -------------------------------------------------------------------

@dataclass
class AuthorClause(Node):
    value: Str


@dataclass
class DocsClause(Node):
    value: Str


@dataclass
class OutcomeClause(Node):
    value: Word


@dataclass
class SubDomainClause(Node):
    value: Word


@dataclass
class RankClause(Node):
    value: Int


@dataclass
class BlameClause(Node):
    value: Word


@dataclass
class ActionClause(Node):
    value: Word


@dataclass
class AliasesClause(Node):
    values: list[Str]


@dataclass
class SourceClause(Node):
    values: list[Word]


@dataclass
class FormatClause(Node):
    values: list[Word]


@dataclass
class RequiresClause(Node):
    names: list[Word]


@dataclass
class UsesClause(Node):
    """`uses python NAME, ...`: the rule relies on Python plugin rules."""

    names: list[Word]


@dataclass
class MatchClause(Node):
    pattern: Regex


@dataclass
class KeyClause(Node):
    name: Name
    more: list[Name] = field(default_factory=list)  # further key groups (a catalog keyed on several spellings)

    @property
    def names(self) -> list[str]:
        return [self.name.value, *(n.value for n in self.more)]


@dataclass
class EmitClause(Node):
    type: Name
    symptom: Str | None = None
    node: Str | None = None
    fields: Table | None = None


@dataclass
class ExpectNothing(Node):
    pass


@dataclass
class ExpectEvent(Node):
    type: Name
    symptom: Str | None = None
    node: Str | None = None
    captures: Table | None = None


@dataclass
class TestClause(Node):
    line: Str
    options: Table | None = None  # `with { source = ..., format = ... }`
    expect: ExpectNothing | ExpectEvent | None = None


@dataclass
class Param(Node):
    name: Name
    value: Value


@dataclass
class MemberDecl(Node):
    name: Word
    clauses: list[Param | TestClause]


@dataclass
class EntryDecl(Node):
    key: Str | Int
    table: Table


@dataclass
class Priority(Node):
    stratum: Name
    offset: Int | None = None


@dataclass
class Condition(Node):
    negate: bool  # `unless`
    patterns: list[Str]
    scope: str | None = None  # None / "anywhere" / "same_node"


@dataclass
class FilterAction(Node):
    action: str  # demote / discard / promote
    event_type: Name | None = None
    patterns: list[Str] = field(default_factory=list)
    nodes: list[Str] = field(default_factory=list)
    condition: Condition | None = None


@dataclass
class GroupAdd(Node):
    type: Name
    symptom: Str | None = None
    fields: Table | None = None


@dataclass
class GroupAct(Node):
    action: str


@dataclass
class PerNode(Node):
    at_least: Int | None
    event_type: Name | None
    patterns: list[Str]
    body: list[GroupAdd | GroupAct]


@dataclass
class RefineWhen(Node):
    negate: bool
    quant: str | None  # any / all / None (= any)
    patterns: list[Str]
    scope: str | None
    action: str  # discard / demote
    targets: list[Str]


@dataclass
class RefineAlways(Node):
    action: str
    targets: list[Str]


@dataclass
class Prefer(Node):
    order: list[Str]


@dataclass
class OutcomeWhen(Node):
    """POST_OUTCOME: `when|unless outcome W, ... [and [any|all] "P", ...] set outcome W [sub_domain W]`."""

    negate: bool
    outcomes: list[Word]
    quant: str | None
    patterns: list[Str]
    set_outcome: Word
    set_sub_domain: Word | None


@dataclass
class GatherClause(Node):
    fields: list[Word]
    event_type: Name | None
    patterns: list[Str]
    unique: bool


@dataclass
class JobClause(Node):
    table: Table


@dataclass
class ObserveClause(Node):
    source: Word
    node: Str | None
    format: Word | None
    lines: list[Str]


@dataclass
class ExpectClause(Node):
    table: Table


@dataclass
class MetricClause(Node):
    """`metric "NAME" [labels { k = "v" }]`: the series a metric rule selects."""

    name: Str
    labels: Table | None = None


@dataclass
class MetricWhenClause(Node):
    """`when AGGREGATE OP NUMBER [for DURATION] [window DURATION]`."""

    aggregate: Name
    op: Name
    threshold: "Int | Float"
    for_: Name | None = None  # duration text: `60s`, `5m` or seconds
    window: Name | None = None


@dataclass
class SeriesTestClause(Node):
    """`test series [[t, v], ...] [with {...}] [=> EXPECTATION]`: a metric rule's inline test."""

    samples: ListV
    options: Table | None
    expect: "ExpectNothing | ExpectEvent | None"


@dataclass
class SeriesClause(Node):
    """`series "NAME" on "NODE" [labels {...}] [[t, v], ...]` in a job test case."""

    name: Str
    node: Str
    labels: Table | None
    samples: ListV


Clause = Union[
    AuthorClause, DocsClause, OutcomeClause, SubDomainClause, RankClause, AliasesClause, SourceClause,
    FormatClause, RequiresClause, UsesClause, MatchClause, KeyClause, EmitClause, TestClause, Param,
    MemberDecl, EntryDecl, FilterAction, PerNode, RefineWhen, RefineAlways, Prefer, OutcomeWhen, GatherClause,
    JobClause, ObserveClause, ExpectClause, MetricClause, MetricWhenClause, SeriesTestClause, SeriesClause,
]


# ---- top-level declarations ----------------------------------------------------

@dataclass
class FileAuthor(Node):
    value: Str


@dataclass
class Decl(Node):
    """A block declaration: `KIND NAME [PRIORITY] { clauses }`."""

    name: Word
    clauses: list
    end_line: int = 0  # line of the closing brace

    kind = ""

    def first(self, typ: type) -> object | None:
        for c in self.clauses:
            if isinstance(c, typ):
                return c
        return None

    def all(self, typ: type) -> list:
        return [c for c in self.clauses if isinstance(c, typ)]


@dataclass
class SymptomDecl(Decl):
    kind = "symptom"


@dataclass
class PrefixDecl(Decl):
    kind = "prefix"


@dataclass
class ExtractorDecl(Decl):
    kind = "extractor"


@dataclass
class FamilyDecl(Decl):
    kind = "family"


@dataclass
class CatalogDecl(Decl):
    kind = "catalog"


@dataclass
class FilterDecl(Decl):
    priority: Priority | None = None
    kind = "filter"


@dataclass
class RefinerDecl(Decl):
    priority: Priority | None = None
    kind = "refiner"


@dataclass
class CollectorDecl(Decl):
    kind = "collector"


@dataclass
class MetricRuleDecl(Decl):
    kind = "metric_rule"


@dataclass
class CaseDecl(Decl):
    kind = "case"


Item = Union[FileAuthor, SymptomDecl, PrefixDecl, ExtractorDecl, FamilyDecl, CatalogDecl, FilterDecl,
             RefinerDecl, CollectorDecl, MetricRuleDecl, CaseDecl]


@dataclass
class Comment(Node):
    text: str  # including the leading `#`


@dataclass
class Module(Node):
    items: list[Item]
    comments: list[Comment]
