"""The package layout as a contract: which group may import which.

Groups, bottom to top.  A module may import its own group and any group listed
below it, never one above (the layering of `rulekit/*/__init__.py`, checked
here as data the way import-linter's "layers" contract does).  Imports inside
functions count too: a lazy import upward is still an upward dependency.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "rulekit"

# bottom -> top; `core` is the flat modules every group may use
LAYERS = ["core", "extract", "rules", "inputs", "engine", "analysis", "service", "blueprint", "executors", "cli"]
CORE = {"rulekit.diagnostics", "rulekit.codes", "rulekit.config"}
# the public faces sit above every group (they re-export); nothing inside a group imports them
FACES = {"rulekit", "rulekit.api", "rulekit.plugin", "rulekit.__main__", "rulekit.pytest_plugin"}
TOP_LEVEL_ALLOWED = {"__init__.py", "__main__.py", "api.py", "plugin.py", "diagnostics.py", "codes.py",
                     "config.py", "pytest_plugin.py"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _group(module: str) -> str | None:
    if module in CORE:
        return "core"
    if module in FACES:
        return "face"
    parts = module.split(".")
    if parts[0] == "rulekit_lsp":
        return "lsp"
    if parts[0] != "rulekit" or len(parts) < 2:
        return None
    if parts[1] in ("bundled_rules", "grammar", "data"):
        return None
    return parts[1] if parts[1] in LAYERS else None


def _imports(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
            # `from rulekit import dsl` names a submodule
            found += [(f"{node.module}.{a.name}", node.lineno) for a in node.names
                      if (PKG.parent / (node.module + "." + a.name).replace(".", "/")).exists()
                      or (PKG.parent / ((node.module + "." + a.name).replace(".", "/") + ".py")).exists()]
    return [(m, ln) for m, ln in found if m.split(".")[0] in ("rulekit", "rulekit_lsp")]


def _target_group(module: str) -> str | None:
    # map `rulekit.engine.session.Session`-like names to the deepest existing module
    parts = module.split(".")
    while parts:
        name = ".".join(parts)
        g = _group(name)
        if g is not None:
            return g
        parts.pop()
    return None


def _violations() -> list[str]:
    out = []
    files = list(PKG.rglob("*.py")) + list((ROOT / "lsp").rglob("*.py"))
    for f in files:
        if "bundled_rules" in f.parts:
            continue
        if f.is_relative_to(ROOT / "lsp"):
            src_group = "lsp"
        else:
            src_group = _group(_module_name(f))
        if src_group in (None, "face"):
            continue
        for mod, line in _imports(f):
            tgt = _target_group(mod)
            if tgt is None or tgt == src_group or (tgt == "lsp" and src_group == "cli"):
                continue
            where = f"{f.relative_to(ROOT)}:{line}: {src_group} imports {mod} ({tgt})"
            if tgt == "face":
                out.append(where + " — a group must not import a public face")
            elif tgt == "lsp" and src_group != "cli":
                out.append(where + " — nothing in rulekit imports the language server")
            elif src_group == "lsp":
                if tgt in ("cli", "service", "blueprint", "executors"):
                    out.append(where + " — the language server sits on analysis, not on " + tgt)
            elif LAYERS.index(tgt) > LAYERS.index(src_group):
                out.append(where + " — upward import")
    return out


def test_no_module_imports_upward():
    assert _violations() == []


def test_the_checker_sees_an_upward_import(tmp_path, monkeypatch):
    """The contract check itself can fail: a planted upward import is reported."""
    bad = PKG / "extract" / "_planted_upward.py"
    bad.write_text("from rulekit.engine.session import Session\n", encoding="utf-8")
    try:
        found = _violations()
    finally:
        bad.unlink()
    assert any("_planted_upward.py:1: extract imports rulekit.engine.session (engine)" in v for v in found)


def test_top_level_holds_only_the_faces():
    flat = {p.name for p in PKG.glob("*.py")}
    assert flat <= TOP_LEVEL_ALLOWED, flat - TOP_LEVEL_ALLOWED
    assert len(flat) <= 8


@pytest.mark.parametrize("group", [g for g in LAYERS if g != "core" and (PKG / g).is_dir()])
def test_every_group_says_what_it_does_and_must_not_import(group):
    init = PKG / group / "__init__.py"
    assert init.is_file(), f"rulekit/{group}/ has no __init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
    assert doc and len(doc) > 80, f"rulekit/{group}/__init__.py needs a docstring"
    if group != "cli":
        assert "must not import" in doc, f"rulekit/{group}/__init__.py: say what it must not import"
