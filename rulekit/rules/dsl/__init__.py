"""The rule DSL front-end (`*.rule` files): parse, compile, format, convert.

Entry points:
- `parse_file(text, path) -> (RuleSet, [Diagnostic])`: parse and compile one
  `.rule` file; never raises on user input.  `compile_parsed(module, diags,
  path)` is its second half (the loader caches `parse_ast` results).
- `parse_ast(text, path) -> (Module, [Diagnostic])`: the typed AST (spans on every
  node) for the language server; Lark types never leave this package.
- `expected_at(text, line, col) -> [str]`: what the grammar accepts at a position,
  in words (keyword completion for the language server).
- `check_references(ruleset, known_rule_names) -> [Diagnostic]`: RK206 for
  `uses python NAME` clauses naming no known rule (the loader calls it).
- `format_dsl`, `format_toml`, `toml_to_dsl`, `dsl_to_toml`: pure text -> text
  functions behind `rulekit fmt` and `rulekit convert`.
This package does no I/O.
"""
from __future__ import annotations

from typing import Iterable

from rulekit.diagnostics import Diagnostic
from rulekit.rules.dsl import ast
from rulekit.rules.dsl.ast import Module
from rulekit.rules.dsl.compiler import compile_module
from rulekit.rules.model import RuleSet

__all__ = ["parse_file", "parse_ast", "expected_at", "check_references", "format_dsl", "format_toml", "toml_to_dsl",
           "dsl_to_toml", "Module", "ast"]


def parse_ast(text: str, path: str) -> tuple[Module, list[Diagnostic]]:
    # the parser (Lark) is imported on first parse: a warm load compiles cached ASTs
    from rulekit.rules.dsl.parser import parse_ast as parse

    return parse(text, path)


def expected_at(text: str, line: int, col: int) -> list[str]:
    from rulekit.rules.dsl.parser import expected_at as f

    return f(text, line, col)


def parse_file(text: str, path: str) -> tuple[RuleSet, list[Diagnostic]]:
    """Compile one `.rule` file into the rule model (partial results when it has errors)."""
    module, diags = parse_ast(text, path)
    return compile_parsed(module, diags, path)


def compile_parsed(module: Module, diags: list[Diagnostic], path: str) -> tuple[RuleSet, list[Diagnostic]]:
    """`parse_file` after `parse_ast`: compile a parsed module (the loader caches parses)."""
    ruleset, more = compile_module(module, path)
    if diags:  # a declaration with a syntax error is partial: its semantic complaints are noise
        broken = [(i.span.line, i.span.end_line) for i in module.items
                  if any(i.span.line <= d.span.line <= i.span.end_line for d in diags if d.span)]
        more = [d for d in more if not d.span or not any(a <= d.span.line <= b for a, b in broken)]
    return ruleset, diags + more


def check_references(ruleset: RuleSet, known_rule_names: Iterable[str]) -> list[Diagnostic]:
    """RK206 for every `uses python NAME` in a DSL rule that names no known rule."""
    known = set(known_rule_names)
    out: list[Diagnostic] = []
    for rule in ruleset.rules:
        decl = getattr(rule, "decl", None)
        if not isinstance(decl, ast.Decl):
            continue
        for uses in decl.all(ast.UsesClause):
            for n in uses.names:
                if n.value not in known:
                    out.append(Diagnostic(
                        "RK206", f"`{rule.name}` uses python `{n.value}`, but no plugin defines a rule of that name",
                        n.span, data={"rule": rule.name, "missing": n.value}))
    return out


def format_dsl(text: str, path: str = "<dsl>") -> str:
    from rulekit.rules.dsl.fmt import format_dsl as f

    return f(text, path)


def format_toml(text: str) -> str:
    from rulekit.rules.dsl.fmt import format_toml as f

    return f(text)


def toml_to_dsl(text: str, path: str = "<toml>") -> str:
    from rulekit.rules.dsl.convert import toml_to_dsl as f

    return f(text, path)


def dsl_to_toml(text: str, path: str = "<dsl>") -> str:
    from rulekit.rules.dsl.convert import dsl_to_toml as f

    return f(text, path)
