"""A wheel built from the repo, installed into a fresh venv, works from any
directory: bundled rules, grammar and data inside, every subpackage shipped."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)],
                   check=True, capture_output=True, text=True)
    [whl] = out.glob("rulekit_gpu-*.whl")
    return whl


def test_every_subpackage_and_data_file_is_in_the_wheel(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for base, prefix in ((REPO / "rulekit", "rulekit"), (REPO / "lsp", "rulekit_lsp")):
        for f in base.rglob("*"):
            if not f.is_file() or "__pycache__" in f.parts or f.suffix == ".pyc":
                continue
            rel = f.relative_to(base).as_posix()
            assert f"{prefix}/{rel}" in names, f"{prefix}/{rel} missing from the wheel: declare it in pyproject.toml"
    for f in (REPO / "bundled_rules").rglob("*"):
        if f.is_file() and f.suffix in (".toml", ".rule", ".py") and "__pycache__" not in f.parts:
            assert f"rulekit/bundled_rules/{f.relative_to(REPO / 'bundled_rules').as_posix()}" in names
    assert "rulekit/grammar/rulekit.lark" in names


def test_installed_wheel_attributes_the_example_from_another_directory(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=True, capture_output=True, text=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    r = subprocess.run([str(env_dir / "bin" / "rulekit"), "attribute", str(REPO / "examples" / "xid149-nvlink"),
                        "--format", "json"], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    (out,) = json.loads(r.stdout)
    assert out["root_cause"]["symptom"] == "XID-149-NVLINK_SIGNAL_INTEGRITY"
    where = subprocess.run([str(py), "-c", "import rulekit, rulekit.rules.loader as l; print(l.bundled_rules_path())"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(env_dir)), where  # the wheel's own rules, not the checkout's
    # a rule folder named `rulekit` where it runs: the command, `python -m rulekit` and a script
    # beside it still get the installed package (a folder without __init__.py never shadows it)
    (elsewhere / "rulekit").mkdir()
    (elsewhere / "rulekit" / "rules.toml").write_text("# rule files\n")
    (elsewhere / "script.py").write_text("import rulekit\nprint(rulekit.setup_rules)\n")
    for argv in ([str(env_dir / "bin" / "rulekit"), "--version"], [str(py), "-m", "rulekit", "--version"],
                 [str(py), "script.py"]):
        r = subprocess.run(argv, cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and ("rulekit 0" in r.stdout or "setup_rules" in r.stdout), (argv, r.stderr)
