"""Protocol-level behaviour of `rulekit lsp` over stdio (pytest-lsp): invalid
settings produce a message and defaults, diagnostics are debounced per document,
code actions, semantic tokens, inlay hints on a sample log, symbols, and the
`rulekit lsp --tcp HOST:PORT` entry point."""
from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient

FIX = Path(__file__).parent / "lsp_fixtures"
SERVER = [sys.executable, "-m", "rulekit_lsp.server"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path: Path):
    shutil.copytree(FIX / "ws", tmp_path / "ws")
    ws = (tmp_path / "ws").resolve()
    lsp_client.ws = ws  # type: ignore[attr-defined]
    lsp_client.publishes = []  # type: ignore[attr-defined]

    @lsp_client.feature(T.CLIENT_REGISTER_CAPABILITY)
    def _register(params):  # the editor accepts the server's file watchers
        lsp_client.registrations = params.registrations  # type: ignore[attr-defined]
        return None

    features = lsp_client.protocol.fm.features
    default = features[T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def _count(params: T.PublishDiagnosticsParams):  # record every publish, then the default handling
        lsp_client.publishes.append((params.uri, params.version))  # type: ignore[attr-defined]
        return default(params)

    features[T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _count

    shown = lsp_client.protocol.wait_for_notification_async(T.WINDOW_SHOW_MESSAGE)
    await lsp_client.initialize_session(T.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("emacs"), root_uri=ws.as_uri(),
        initialization_options={"debounceMs": 800, "lint": "sometimes", "noSuchSetting": 1}))
    lsp_client.first_message = await asyncio.wait_for(shown, 10)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


def open_doc(client: LanguageClient, path: Path, text: str | None = None) -> str:
    client.text_document_did_open(T.DidOpenTextDocumentParams(text_document=T.TextDocumentItem(
        uri=path.as_uri(), language_id="rulekit", version=1, text=text if text is not None else path.read_text())))
    return path.as_uri()


async def test_invalid_settings_message_not_failure(client: LanguageClient):
    msg = client.first_message  # type: ignore[attr-defined]
    assert msg.type == T.MessageType.Warning
    assert "lint" in msg.message or "noSuchSetting" in msg.message
    await asyncio.sleep(0.2)
    texts = [m.message for m in client.messages]
    assert any("`lint`" in t and "expected true/false" in t for t in texts)
    assert any("noSuchSetting" in t for t in texts)
    # the server works with the defaults
    base = client.ws / "rules" / "base.toml"  # type: ignore[attr-defined]
    u = open_doc(client, base)
    h = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=u), position=T.Position(line=4, character=10)))
    assert h is not None and "GPU_FELL_OFF" in h.contents.value


async def test_diagnostics_are_debounced_per_document(client: LanguageClient):
    base = client.ws / "rules" / "base.toml"  # type: ignore[attr-defined]
    u = open_doc(client, base)
    deadline = time.monotonic() + 10
    while (u, 1) not in client.publishes and time.monotonic() < deadline:  # type: ignore[attr-defined]
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # let the background test run of the opened file finish
    text = base.read_text()
    before = len([p for p in client.publishes if p[0] == u])  # type: ignore[attr-defined]
    for v in range(2, 12):  # ten quick keystrokes, 20 ms apart (debounce 800 ms)
        client.text_document_did_change(T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=u, version=v),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=text + "#" * v)]))
        await asyncio.sleep(0.02)
    deadline = time.monotonic() + 10
    while (u, 11) not in client.publishes and time.monotonic() < deadline:  # type: ignore[attr-defined]
        await asyncio.sleep(0.05)
    # one analysis for the ten edits: only the last version is published (lint results for
    # the opened version may still arrive in between; they carry version 1)
    mine = [p for p in client.publishes[before:] if p[0] == u and (p[1] or 0) >= 2]  # type: ignore[attr-defined]
    assert mine == [(u, 11)]


async def test_code_action_registers_missing_symptom(client: LanguageClient):
    extra = client.ws / "rules" / "extra.rule"  # type: ignore[attr-defined]
    text = extra.read_text().replace('emit bad_node "DATALOADER_KILLED"', 'emit bad_node "WORKER_KILLED"')
    u = open_doc(client, extra, text)
    deadline = time.monotonic() + 10
    while not any(d.code == "RK203" for d in client.diagnostics.get(u, [])) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    d = [d for d in client.diagnostics[u] if d.code == "RK203"][0]
    acts = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=u), range=d.range, context=T.CodeActionContext(diagnostics=[d])))
    assert [a.title for a in acts] == ["Register symptom `WORKER_KILLED`"]
    (edit,) = acts[0].edit.changes[u]
    assert 'symptom "WORKER_KILLED" {' in edit.new_text


async def test_semantic_tokens_inlay_hints_and_symbols(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    u = open_doc(client, ws / "rules" / "extra.rule")
    toks = await client.text_document_semantic_tokens_full_async(T.SemanticTokensParams(
        text_document=T.TextDocumentIdentifier(uri=u)))
    assert toks.data and len(toks.data) % 5 == 0
    syms = await client.text_document_document_symbol_async(T.DocumentSymbolParams(
        text_document=T.TextDocumentIdentifier(uri=u)))
    assert [s.name for s in syms] == ["DATALOADER_KILLED", "DataLoaderKilled", "DemoteTimeouts"]
    found = await client.workspace_symbol_async(T.WorkspaceSymbolParams(query="Demote"))
    assert {s.name for s in found} == {"DemoteTimeouts", "DemoteHostOom"}
    log = ws / "examples" / "job1" / "applog" / "train.log"
    lu = open_doc(client, log)
    hints = await client.text_document_inlay_hint_async(T.InlayHintParams(
        text_document=T.TextDocumentIdentifier(uri=lu),
        range=T.Range(start=T.Position(line=0, character=0), end=T.Position(line=10, character=0))))
    assert [(h.position.line, h.label) for h in hints] == [(1, "← NcclWatchdog (NCCL_TIMEOUT)"),
                                                           (3, "← DataLoaderKilled (DATALOADER_KILLED)")]


def test_cli_tcp_transport(tmp_path: Path):
    """`rulekit lsp --tcp HOST:PORT` listens; an initialize request over the socket is answered."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rulekit = Path(sys.executable).parent / "rulekit"
    proc = subprocess.Popen([str(rulekit), "lsp", "--tcp", f"127.0.0.1:{port}"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise AssertionError(proc.stderr.read().decode() if proc.poll() is not None else "no listener")
                time.sleep(0.1)
        body = ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,'
                '"capabilities":{}}}').encode()
        conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        conn.settimeout(20)
        data = b""
        while b'"id": 1' not in data and b'"id":1' not in data:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        conn.close()
        assert b"hoverProvider" in data and b"rulekit.runTests" in data
    finally:
        proc.terminate()
        proc.wait(10)
    bad = subprocess.run([str(rulekit), "lsp", "--tcp", "nope"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr


async def test_background_job_exceptions_reach_the_awaiting_coroutine():
    # regression: the exception was referenced after its `except` block ended (NameError instead)
    from rulekit_lsp.scheduling import Scheduler

    def boom():
        raise ValueError("lint failed")

    with pytest.raises(ValueError, match="lint failed"):
        await Scheduler.background(boom)
    assert await Scheduler.background(lambda: 42) == 42


async def test_project_file_change_reconfigures(client: LanguageClient):
    """Writing a project file into the workspace while the server runs: the server
    reloads which folders are the corpus and reports the file's own problems on it."""
    project = client.ws / "rulekit.toml"  # type: ignore[attr-defined]
    project.write_text('rules = ["no-such-folder"]\n')
    published = client.protocol.wait_for_notification_async(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    client.workspace_did_change_watched_files(T.DidChangeWatchedFilesParams(changes=[
        T.FileEvent(uri=project.as_uri(), type=T.FileChangeType.Created)]))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        got = client.diagnostics.get(project.as_uri())
        if got:
            break
        await asyncio.sleep(0.1)
    got = client.diagnostics.get(project.as_uri()) or []
    assert [d.code for d in got] == ["RK008"], got
    assert "no-such-folder" in got[0].message
    published.cancel()
