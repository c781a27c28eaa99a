"""Plugins are code: a rule plugin that never returns, exits, prints or raises a
BaseException ends in a located diagnostic at the plugin file, within the
plugin time limit, in `check`, `test`, `attribute --rules` and the language
server (which keeps answering meanwhile); our stdout stays clean JSON."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient

from rulekit.rules import sandbox
from rulekit.rules.loader import load_corpus

from corpora import ONE_TESTED_RULE

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "xid149-nvlink"
RULEKIT = [sys.executable, "-m", "rulekit"]

LOOP = "x = 1\nwhile True:\n    pass\n"
SLEEP = "import time\ntime.sleep(3600)\n"
EXIT = "import sys\nsys.exit(3)\n"
PRINT = 'import os\nprint("hello from plugin")\nos.write(1, b"raw fd write\\n")\n'
BASEEXC = "class Boom(BaseException):\n    pass\n\nraise Boom('no')\n"


def _folder(tmp_path: Path, **plugins: str) -> Path:
    d = tmp_path / "R"
    d.mkdir()
    (d / "base.toml").write_text(ONE_TESTED_RULE)
    for name, text in plugins.items():
        (d / f"{name}.py").write_text(text)
    return d


def _run(args, timeout=60, **env):
    e = dict(os.environ, **env)
    t0 = time.monotonic()
    p = subprocess.run(RULEKIT + args, capture_output=True, text=True, timeout=timeout, env=e)
    return p, time.monotonic() - t0


@pytest.mark.parametrize("cmd", ["check", "test", "attribute"])
def test_plugin_that_never_returns_ends_with_a_diagnostic_within_the_limit(tmp_path, cmd):
    rules = _folder(tmp_path, zz_loop=LOOP)
    args = {"check": ["check", str(rules)], "test": ["test", str(rules)],
            "attribute": ["attribute", "--rules", str(rules), str(EXAMPLE)]}[cmd]
    p, took = _run(["--plugin-timeout", "1.5", *args])
    out = p.stdout + p.stderr
    assert "RK006" in out and ("zz_loop.py:2:1" in out or "zz_loop.py:3:1" in out), out
    assert p.returncode != 0
    assert took < 1.5 + 12, took  # the limit plus the start-up of two interpreters


def test_time_limit_from_environment_and_blocking_call(tmp_path):
    rules = _folder(tmp_path, sleeper=SLEEP)
    p, took = _run(["check", str(rules), "--format", "json"], RULEKIT_PLUGIN_TIMEOUT="1")
    d = json.loads(p.stdout)
    (diag,) = [x for x in d["diagnostics"] if x["code"] == "RK006"]
    assert diag["span"]["file"].endswith("sleeper.py") and diag["span"]["line"] == 2
    assert took < 12


def test_sys_exit_is_a_located_diagnostic_not_our_exit_status(tmp_path):
    rules = _folder(tmp_path, exits=EXIT)
    p, _ = _run(["check", str(rules), "--format", "json"])
    assert p.returncode == 1
    d = json.loads(p.stdout)
    (diag,) = [x for x in d["diagnostics"] if x["code"] == "RK004"]
    assert "sys.exit(3)" in diag["message"] and diag["span"]["line"] == 2


def test_base_exception_is_a_located_diagnostic(tmp_path):
    rules = _folder(tmp_path, boom=BASEEXC)
    res = load_corpus([rules])
    (diag,) = [d for d in res.diagnostics if d.code == "RK004"]
    assert "Boom" in diag.message and diag.span.line == 4


def test_in_process_execution_turns_system_exit_into_a_diagnostic(tmp_path):
    """The second line of defence (a plugin that exits only when imported in-process)."""
    from rulekit.rules.loader import exec_plugin
    from rulekit.rules.sandbox import package_for

    f = tmp_path / "p.py"
    f.write_text(EXIT)
    _, diags = exec_plugin(f, package_for(tmp_path), EXIT)
    assert [d.code for d in diags] == ["RK004"] and diags[0].span.line == 2


@pytest.mark.parametrize("cmd", ["check", "attribute"])
def test_plugin_output_is_a_note_and_stdout_stays_json(tmp_path, cmd):
    rules = _folder(tmp_path, noisy=PRINT)
    args = (["check", str(rules), "--format", "json"] if cmd == "check"
            else ["attribute", "--rules", str(rules), str(EXAMPLE), "--format", "json"])
    p, _ = _run(args)
    d = json.loads(p.stdout)  # nothing of the plugin's on our stdout
    if cmd == "check":
        (note,) = [x for x in d["diagnostics"] if x["code"] == "RK007"]
        assert "hello from plugin" in note["message"] and "raw fd write" in note["message"]
        assert note["severity"] == "info" and note["span"]["file"].endswith("noisy.py")
    else:
        assert d[0]["job_id"]


def test_probe_verdicts_are_cached_by_content(tmp_path):
    rules = _folder(tmp_path, ok="X = 1\n")
    f = str(rules / "ok.py")
    v1 = sandbox.probe_plugins([(f, "X = 1\n")], 5)
    t0 = time.monotonic()
    v2 = sandbox.probe_plugins([(f, "X = 1\n")], 5)
    assert v1[f].ok and v2[f] is v1[f] and time.monotonic() - t0 < 0.05
    assert sandbox.cached(f, "X = 2\n", 5) is None


def test_a_plugin_after_a_hanging_one_still_loads(tmp_path):
    rules = _folder(tmp_path, a_loop=LOOP, b_good='from rulekit.plugin import register_symptom\n'
                    'register_symptom("BAR_FAULT", outcome="hardware", sub_domain="gpu", rank=5)\n')
    res = load_corpus([rules], plugin_timeout=1.0)
    assert "RK006" in {d.code for d in res.diagnostics}
    assert "BAR_FAULT" in {s.name for s in res.ruleset.symptoms}


# ---- the language server keeps answering --------------------------------------------------------

@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "rulekit_lsp.server"]))
async def client(lsp_client: LanguageClient, tmp_path: Path):
    rules = _folder(tmp_path, zz_loop=LOOP, noisy=PRINT)
    lsp_client.rules = rules  # type: ignore[attr-defined]
    t0 = time.monotonic()
    await asyncio.wait_for(lsp_client.initialize_session(T.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("neovim"), root_uri=tmp_path.as_uri(),
        initialization_options={"pluginTimeoutMs": 8000, "lint": False})), 60)
    lsp_client.init_seconds = time.monotonic() - t0  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


async def test_language_server_answers_while_a_plugin_hangs(client: LanguageClient):
    rules: Path = client.rules  # type: ignore[attr-defined]
    loop_uri = (rules / "zz_loop.py").as_uri()
    uri = (rules / "base.toml").as_uri()
    client.text_document_did_open(T.DidOpenTextDocumentParams(text_document=T.TextDocumentItem(
        uri=uri, language_id="toml", version=1, text=ONE_TESTED_RULE)))
    res = await asyncio.wait_for(client.text_document_document_symbol_async(
        T.DocumentSymbolParams(text_document=T.TextDocumentIdentifier(uri=uri))), 30)
    # answered while the hanging plugin is still being probed (its 8 s limit has not run out)
    assert res is not None and not client.diagnostics.get(loop_uri)
    for _ in range(600):
        if client.diagnostics.get(loop_uri):
            break
        await asyncio.sleep(0.1)
    diags = client.diagnostics.get(loop_uri, [])
    assert [d.code for d in diags] == ["RK006"], diags
    assert diags[0].range.start.line in (1, 2)
    noisy = client.diagnostics.get((rules / "noisy.py").as_uri(), [])
    assert [d.code for d in noisy] == ["RK007"]
    # the protocol stream survived the plugin's prints and fd writes: still answering
    res = await asyncio.wait_for(client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=uri), position=T.Position(line=1, character=9))), 30)
    errors = [m.message for m in client.log_messages if m.type == T.MessageType.Error]
    assert errors == []


def test_a_longer_limit_is_not_overruled_by_a_cached_timeout(tmp_path):
    """The compiled-corpus cache must not replay an RK006 from a shorter limit."""
    rules = _folder(tmp_path, slow="import time\ntime.sleep(1.5)\n")
    short = load_corpus([rules], plugin_timeout=0.5)
    assert "RK006" in {d.code for d in short.diagnostics}
    long = load_corpus([rules], plugin_timeout=20)
    assert "RK006" not in {d.code for d in long.diagnostics} and long.ok
