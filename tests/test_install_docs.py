"""What a newcomer pastes works: every install command in the README, the docs and the
VS Code extension names the distribution (`rulekit` on the package index is an
unrelated library), the README shows it, and the README's library snippet runs as
pasted in an empty folder."""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from rulekit import DISTRIBUTION

REPO = Path(__file__).resolve().parent.parent
# pip install [options] ARGS...; ARGS up to a shell separator, a backtick or the end of the line
_INSTALL = re.compile(r"pip3?\s+install\s+([^`\\\n;&|)]*)")
_OPTION_WITH_VALUE = {"-r", "-c", "-e", "--editable", "-i", "--index-url", "--extra-index-url", "-t", "--target",
                      "-f", "--find-links"}


def _install_targets(text: str) -> list[tuple[int, str]]:
    """(line, requirement) of every package a `pip install` in `text` names."""
    out = []
    for m in _INSTALL.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        words = m.group(1).split("#", 1)[0].split()
        skip = False
        for w in words:
            if skip:
                skip = False
                continue
            if w in _OPTION_WITH_VALUE:
                skip = w not in ("-e", "--editable")  # `-e .[test]` is a path: read it as one
                continue
            if w.startswith("-"):
                continue
            out.append((line, w.strip("'\"")))
    return out


def _names_rulekit(req: str) -> bool:
    name = re.split(r"[\[<>=!~; ]", req, maxsplit=1)[0]
    return re.fullmatch(r"rulekit([-_.].*)?", name, re.I) is not None


def _documents() -> list[Path]:
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "lsp" / "README.md",
            REPO / "vscode-extension" / "README.md", REPO / "vscode-extension" / "package.json",
            *sorted((REPO / "vscode-extension" / "src").glob("*.ts"))]
    return [p for p in docs if p.exists()]


def test_the_distribution_name_is_the_one_pyproject_builds():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    assert meta["name"] == DISTRIBUTION == "rulekit-gpu"
    assert meta["scripts"]["rulekit"] == "rulekit.cli:main"  # the command stays `rulekit`


def test_every_install_command_names_the_distribution():
    wrong, seen = [], 0
    for doc in _documents():
        for line, req in _install_targets(doc.read_text("utf-8")):
            if not _names_rulekit(req):
                continue
            seen += 1
            if re.split(r"[\[<>=!~; ]", req, maxsplit=1)[0].lower().replace("_", "-") != DISTRIBUTION:
                wrong.append(f"{doc.relative_to(REPO)}:{line}: `pip install {req}` installs another package; "
                             f"use `pip install {DISTRIBUTION}`")
    assert not wrong, "\n".join(wrong)
    assert seen >= 3, "the extension's README, its settings and its messages each show the install command"


def test_the_install_command_finder_sees_the_wrong_name():
    """The check above cannot pass vacuously: it finds `pip install rulekit` and its variants."""
    text = "run `pip install rulekit` or\n    python -m pip install -U 'rulekit[test]>=0.1'\n pip install -e .[test]\n"
    assert [r for _, r in _install_targets(text)] == ["rulekit", "rulekit[test]>=0.1", ".[test]"]
    assert [_names_rulekit(r) for _, r in _install_targets(text)] == [True, True, False]


def test_the_readme_shows_the_install_command():
    reqs = [r for _, r in _install_targets((REPO / "README.md").read_text("utf-8"))]
    assert any(r == DISTRIBUTION for r in reqs), f"README.md shows no `pip install {DISTRIBUTION}`"


def _library_snippets(doc: Path) -> list[str]:
    """The ```python blocks that use the library (`from rulekit import ...`)."""
    text = doc.read_text("utf-8")
    return [m.group(1) for m in re.finditer(r"```python\n(.*?)```", text, re.S) if "from rulekit import" in m.group(1)]


@pytest.mark.parametrize("doc", ["README.md", "docs/library.md"])
def test_the_library_snippet_runs_as_pasted(doc, tmp_path):
    snippets = _library_snippets(REPO / doc)
    assert snippets, f"{doc} shows no library snippet"
    text = (REPO / doc).read_text("utf-8")
    for code in snippets:
        p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=180)
        assert p.returncode == 0, f"{doc}'s snippet fails as pasted:\n{code}\n{p.stderr[-3000:]}"
        # what the text after the snippet says it prints, it prints
        said = re.search(re.escape(code) + r"```\s*\n+It prints `([^`]*)`", text)
        if said:
            assert p.stdout.strip() == said.group(1), (p.stdout, said.group(1))


def test_the_vsix_is_built_not_promised():
    """No `.vsix` is checked in: every document that names one says how to build it (`make vsix`),
    and that target runs the extension's own package script, which writes the file named."""
    import json as _json

    make = (REPO / "Makefile").read_text("utf-8")
    target = make.split("\nvsix:", 1)[1].split("\n\n", 1)[0]
    assert "npm ci" in target and "npm run -s package" in target
    script = _json.loads((REPO / "vscode-extension" / "package.json").read_text("utf-8"))["scripts"]["package"]
    assert "--out rulekit.vsix" in script
    for doc in (REPO / "lsp" / "README.md", REPO / "vscode-extension" / "README.md"):
        text = doc.read_text("utf-8")
        assert "rulekit.vsix" in text and "make vsix" in text, doc
    assert not list((REPO / "vscode-extension").glob("*.vsix")) or "*.vsix" in (REPO / ".gitignore").read_text()


def test_make_demo_installs_only_what_the_demo_needs():
    """`make demo` installs the package alone; the test extra (pytest, the LSP test client, the
    browser driver, ...) comes with `make test`."""
    import shutil

    if shutil.which("make") is None:
        pytest.skip("make is not installed")

    def commands(target: str) -> list[str]:
        out = subprocess.run(["make", "-n", "-B", target], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return [ln for ln in out.stdout.splitlines() if "pip install" in ln and "--upgrade pip" not in ln]

    demo = commands("demo")
    assert demo and all("[test]" not in ln and ln.rstrip().endswith("-e .") for ln in demo), demo
    assert any('.[test]' in ln for ln in commands("test"))
