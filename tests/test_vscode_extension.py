"""The VS Code extension (`vscode-extension/`) built and tested from `make test`.

Runs, offline once `npm ci` has populated `node_modules` from the committed
lock file: the TypeScript type check, the esbuild bundle, the grammar tests
(vscode-tmgrammar-test scope assertions over `test/syntax/*`), the `node --test`
suites (grammar coverage, pure helpers, and the activation test in which the
real vscode-languageclient starts this repository's `rulekit lsp`), and
`vsce package`.  Each step fails with its own output.  Also checks that the
committed grammar JSON matches its generator and that the grammar samples and
the README example are valid DSL.  Skips only when `node` / `npm` are missing.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rulekit.rules.dsl import parse_ast

EXT = Path(__file__).resolve().parent.parent / "vscode-extension"
NODE = shutil.which("node")
NPM = shutil.which("npm")
STAMP = EXT / "node_modules" / ".rulekit-lock-sha256"

pytestmark = pytest.mark.skipif(not (NODE and NPM), reason="node/npm not installed: the VS Code extension cannot be "
                                "built or tested here (CI has Node 20)")


def run(argv: list[str], timeout: float = 120, env: dict[str, str] | None = None) -> str:
    try:
        proc = subprocess.run(argv, cwd=EXT, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "npm_config_update_notifier": "false", "NO_COLOR": "1", **(env or {})})
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"`{' '.join(argv)}` did not finish in {timeout} s:\n{out[-6000:]}", pytrace=False)
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"`{' '.join(argv)}` exited {proc.returncode}:\n{out[-6000:]}", pytrace=False)
    return out


def bin_(name: str) -> str:
    return str(EXT / "node_modules" / ".bin" / name)


@pytest.fixture(scope="module")
def built() -> Path:
    """node_modules from the lock file (npm ci only when missing or the lock changed), then the bundle."""
    lock_hash = hashlib.sha256((EXT / "package-lock.json").read_bytes()).hexdigest()
    if not STAMP.exists() or STAMP.read_text().strip() != lock_hash:
        run([NPM, "ci", "--prefer-offline", "--no-audit", "--no-fund"], timeout=300)
        STAMP.write_text(lock_hash)
    run([NPM, "run", "-s", "bundle"])
    return EXT / "dist" / "extension.js"


def test_grammar_json_is_generated_from_the_script():
    proc = subprocess.run([sys.executable, str(EXT / "scripts" / "gen_grammar.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _generator():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_grammar", EXT / "scripts" / "gen_grammar.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


def test_grammar_knows_every_dsl_keyword():
    """A keyword added to the DSL must be added to the grammar (scripts/gen_grammar.py) too."""
    from rulekit.rules.dsl.fmt import KEYWORDS

    gen = _generator()
    assert sorted(KEYWORDS - gen.ALL_KEYWORDS) == [], "DSL keywords the grammar does not colour"
    assert sorted(gen.ALL_KEYWORDS - KEYWORDS) == [], "grammar keywords the DSL no longer has"


def test_grammar_names_match_the_rule_model():
    """Strata, emit/event types and outcomes the grammar colours (and marks invalid otherwise) are the model's."""
    from rulekit.rules.model import EMIT_TYPES, OUTCOMES, FilterPriority, RefinerPriority

    gen = _generator()
    assert list(gen.STRATA_FILTER) == [p.name for p in FilterPriority]
    assert list(gen.STRATA_REFINER) == [p.name for p in RefinerPriority]
    assert list(gen.EVENT_TYPES) == list(EMIT_TYPES)
    assert list(gen.OUTCOMES) == list(OUTCOMES)


@pytest.mark.parametrize("sample", ["all-constructs.rule", "regex.rule"])
def test_grammar_samples_are_valid_dsl(sample: str):
    text = (EXT / "test" / "syntax" / sample).read_text(encoding="utf-8")
    _, diags = parse_ast(text, sample)
    assert [str(d) for d in diags] == []


def test_invalid_sample_is_rejected_by_the_dsl():
    text = (EXT / "test" / "syntax" / "invalid.rule").read_text(encoding="utf-8")
    _, diags = parse_ast(text, "invalid.rule")
    assert diags, "the invalid sample must not parse (it shows what the grammar marks invalid)"


def test_readme_rule_blocks_are_valid_dsl():
    readme = (EXT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```rule\n(.*?)^```", readme, re.M | re.S)
    assert blocks, "the README shows a ```rule example"
    for b in blocks:
        _, diags = parse_ast(b, "README.md")
        assert [str(d) for d in diags] == []


def test_real_rule_files_have_no_invalid_tokens(built, tmp_path: Path):
    """Every valid DSL text we have (bundled .rule files, the bundled TOML corpus converted to DSL, the
    language reference's examples) must tokenize without a single invalid.* scope."""
    from rulekit.rules.dsl import toml_to_dsl

    repo = EXT.parent
    files = sorted(str(p) for p in (repo / "bundled_rules").glob("*.rule"))
    for toml in sorted((repo / "bundled_rules").glob("*.toml")):
        if toml.name.endswith(".test.toml"):
            continue
        out = tmp_path / f"{toml.stem}.rule"
        out.write_text(toml_to_dsl(toml.read_text(encoding="utf-8"), str(toml)), encoding="utf-8")
        files.append(str(out))
    ref = repo / "grammar" / "README.md"
    if ref.exists():
        for i, block in enumerate(re.findall(r"^```rule\n(.*?)^```", ref.read_text(encoding="utf-8"), re.M | re.S)):
            out = tmp_path / f"reference-{i}.rule"
            out.write_text(block, encoding="utf-8")
            files.append(str(out))
    assert len(files) > 10
    run([NODE, "test/tokenize.js", "--no-invalid", *files])


def test_typecheck(built):
    run([bin_("tsc"), "--noEmit", "-p", "."])


def test_grammar_scope_assertions(built):
    out = run([bin_("vscode-tmgrammar-test"), "test/syntax/*.rule"], timeout=60)
    assert "failed" not in out
    out = run([bin_("vscode-tmgrammar-test"), "-g", "test/grammars/markdown-min.tmLanguage.json", "test/syntax/*.md"],
              timeout=60)
    assert "failed" not in out


def test_node_suites_grammar_units_and_activation(built):
    """node --test: grammar coverage, pure helpers, and the activation test against the real server."""
    out = run([NODE, "--test", "--test-reporter=spec", *sorted(str(p.relative_to(EXT)) for p in (EXT / "test").glob("*.test.js"))],
              timeout=180, env={"RULEKIT_PYTHON": sys.executable})
    assert re.search(r"^ℹ fail 0$", out, re.M), out[-4000:]
    # the activation suite may only skip when the server module is missing, and it is in this repository
    for name in ("starts the server and registers the commands", "publishes the deliberate error with its code and range",
                 "answers hover on a symptom name with its registration", "gives code lenses that run the tests",
                 "runs the file's tests through the server", "says which Python is missing and how to fix it"):
        assert re.search(rf"^\s*✔ {re.escape(name)} \(", out, re.M), f"activation test did not pass: {name}\n{out[-4000:]}"


def test_vsce_package(built, tmp_path: Path):
    vsix = tmp_path / "rulekit.vsix"
    run([bin_("vsce"), "package", "--no-dependencies", "--out", str(vsix)], timeout=180)
    names = set(zipfile.ZipFile(vsix).namelist())
    for f in ("extension/package.json", "extension/dist/extension.js", "extension/syntaxes/rulekit.tmLanguage.json",
              "extension/syntaxes/rulekit-markdown-injection.json", "extension/language-configuration.json",
              "extension/readme.md"):
        assert f in names, sorted(names)
    assert not any(n.startswith("extension/src/") or n.startswith("extension/test/") or "node_modules" in n
                   for n in names), sorted(names)


def test_activation_suite_fails_instead_of_skipping_without_the_server(built, tmp_path: Path):
    """A Python without rulekit must fail the activation suite (with the fix), never skip it."""
    bare = tmp_path / "venv-without-rulekit"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    env = dict(os.environ, RULEKIT_PYTHON=str(bare / "bin" / "python"))
    proc = subprocess.run([NODE, "--test", "--test-reporter=spec", "test/activation.test.js"], cwd=EXT,
                          capture_output=True, text=True, timeout=300, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "needs the project's Python and the bundle" in out and "language server module is missing" in out, out[-3000:]
