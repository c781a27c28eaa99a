"""The editor configurations shipped in lsp/editors/ (and quoted in lsp/README.md)
work: each real editor, headless, loads the snippet unchanged, opens a TOML and a
DSL rule file of the fixture corpus, and receives the server's diagnostics.
Neovim: `neovim-0.7.lua` on the installed nvim, `neovim-0.11.lua` when nvim is
0.11+; Emacs: `rulekit-eglot.el` when emacs with eglot is installed (skipped
otherwise; `.ci/run` installs only neovim)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EDITORS = ROOT / "lsp" / "editors"
FIX = ROOT / "tests" / "lsp_fixtures"
RULEKIT = Path(sys.executable).parent / "rulekit"


@pytest.fixture()
def ws(tmp_path: Path) -> tuple[Path, dict]:
    ws = tmp_path / "ws"
    shutil.copytree(FIX / "ws", ws)
    (ws / ".git").mkdir()  # a root marker
    base = ws / "rules" / "base.toml"
    base.write_text(base.read_text().replace('symptom = "NCCL_TIMEOUT" }', 'symptom = "NCCL_TIMEOUTX" }'))
    extra = ws / "rules" / "extra.rule"
    extra.write_text(extra.read_text().replace('emit bad_node "DATALOADER_KILLED"', 'emit bad_node "DL_KILLED"'))
    bindir = tmp_path / "bin"  # the snippets run plain `rulekit lsp`
    bindir.mkdir()
    (bindir / "rulekit").symlink_to(RULEKIT)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    return ws, env


EXPECTED = {"base.toml": "`NcclWatchdog` uses symptom `NCCL_TIMEOUTX`, which is not registered",
            "extra.rule": "`DataLoaderKilled` uses symptom `DL_KILLED`, which is not registered"}


def nvim_version(nvim: str) -> tuple[int, int]:
    out = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


@pytest.mark.parametrize("snippet", ["neovim-0.7.lua", "neovim-0.11.lua"])
def test_neovim_config(ws, snippet: str):
    nvim = shutil.which("nvim")
    if nvim is None:
        if os.environ.get("CI"):
            pytest.fail("nvim is not installed but CI is set")
        pytest.skip("nvim is not installed")
    if snippet == "neovim-0.11.lua" and nvim_version(nvim) < (0, 11):
        pytest.skip(f"needs Neovim 0.11+, found {nvim_version(nvim)}")
    root, env = ws
    for name, message in EXPECTED.items():
        r = subprocess.run([nvim, "--headless", "-u", str(EDITORS / snippet), "-c",
                            f"luafile {FIX / 'editor_check.lua'}", f"rules/{name}"],
                           cwd=root, env=env, capture_output=True, text=True, timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"RK203 {message}" in r.stdout
        assert ("filetype=rulekit" if name.endswith(".rule") else "filetype=toml") in r.stdout


def test_emacs_eglot_config(ws):
    emacs = shutil.which("emacs")
    if emacs is None:
        pytest.skip("emacs is not installed (apt-get install -y emacs-nox elpa-eglot)")
    probe = subprocess.run([emacs, "--batch", "--eval", "(progn (require 'eglot) (princ \"ok\"))"],
                           capture_output=True, text=True, timeout=60)
    if "ok" not in probe.stdout:
        pytest.skip("eglot is not available (Emacs 28: apt-get install -y elpa-eglot)")
    root, env = ws
    for name, message in EXPECTED.items():
        r = subprocess.run([emacs, "--batch", "-l", str(EDITORS / "rulekit-eglot.el"), "-l",
                            str(FIX / "editor_check.el"), f"rules/{name}"],
                           cwd=root, env=env, capture_output=True, text=True, timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"[RK203]: {message}" in r.stdout
