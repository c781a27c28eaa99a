"""End-to-end tests of `rulekit lsp` over stdio with a real LSP client (pytest-lsp),
run once with VS Code's and once with Neovim's declared client capabilities."""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient

WS = (Path(__file__).parent / "lsp_fixtures" / "ws").resolve()
RULES = WS / "rules"
BASE = RULES / "base.toml"
EXTRA = RULES / "extra.rule"
SERVER = [sys.executable, "-m", "rulekit_lsp.server"]

pytestmark = pytest.mark.asyncio(loop_scope="module")


def uri(p: Path) -> str:
    return p.as_uri()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER), scope="module",
                    params=["visual-studio-code", "neovim"])
async def client(lsp_client: LanguageClient, request):
    @lsp_client.feature(T.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params):  # VS Code declares refresh support; answer like it does
        return None
    @lsp_client.feature(T.CLIENT_REGISTER_CAPABILITY)
    def _register(params):  # the editor accepts the server's file watchers
        lsp_client.registrations = params.registrations  # type: ignore[attr-defined]
        return None


    await lsp_client.initialize_session(T.InitializeParams(
        capabilities=pytest_lsp.client_capabilities(request.param), root_uri=uri(WS),
        workspace_folders=[T.WorkspaceFolder(uri=uri(WS), name="ws")],
        initialization_options={"debounceMs": 20, "lintDelayMs": 100}))
    yield
    await lsp_client.shutdown_session()


async def until(pred, timeout: float = 15.0, what: str = "condition"):
    deadline = asyncio.get_event_loop().time() + timeout
    while True:
        got = pred()
        if got:
            return got
        if asyncio.get_event_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def open_doc(client: LanguageClient, path: Path, text: str | None = None, version: int = 1) -> str:
    lang = {".toml": "toml", ".rule": "rulekit", ".py": "python", ".log": "log"}[path.suffix]
    client.text_document_did_open(T.DidOpenTextDocumentParams(text_document=T.TextDocumentItem(
        uri=uri(path), language_id=lang, version=version, text=text if text is not None else path.read_text())))
    return uri(path)


def change(client: LanguageClient, u: str, text: str, version: int) -> None:
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        text_document=T.VersionedTextDocumentIdentifier(uri=u, version=version),
        content_changes=[T.TextDocumentContentChangeWholeDocument(text=text)]))


def codes(client: LanguageClient, u: str) -> list[str]:
    return [str(d.code) for d in client.diagnostics.get(u, [])]


async def test_diagnostics_while_typing(client: LanguageClient):
    u = open_doc(client, BASE)
    # the clean fixture: an empty publish for the file
    await until(lambda: u in client.diagnostics, what="first publish")
    assert codes(client, u) == []
    text = BASE.read_text()
    broken = text.replace('symptom = "NCCL_TIMEOUT" }', 'symptom = "NCCL_TIMEOUTT" }')
    change(client, u, broken, 2)
    await until(lambda: "RK203" in codes(client, u), what="RK203")
    d = [d for d in client.diagnostics[u] if d.code == "RK203"][0]
    line_no = broken.split("\n").index('emit = { type = "bad_node", symptom = "NCCL_TIMEOUTT" }')
    assert d.range.start.line == line_no
    assert "NCCL_TIMEOUTT" in d.message
    # a TOML syntax error, then back to the clean text: the diagnostics go away
    change(client, u, text + "\n[[extractor\n", 3)
    await until(lambda: "RK002" in codes(client, u), what="RK002")
    change(client, u, text, 4)
    await until(lambda: codes(client, u) == [], what="clean again")


async def test_failing_inline_test_on_its_range(client: LanguageClient):
    u = open_doc(client, BASE)
    text = BASE.read_text()
    bad = text.replace('line = "GPU is fine"', 'line = "GPU has fallen off the bus, says the test"')
    change(client, u, bad, 10)
    await until(lambda: "RK401" in codes(client, u), what="RK401", timeout=30)
    d = [d for d in client.diagnostics[u] if d.code == "RK401"][0]
    assert bad.split("\n")[d.range.start.line].startswith('line = "GPU has fallen off the bus, says')
    change(client, u, text, 11)
    await until(lambda: "RK401" not in codes(client, u), what="RK401 gone", timeout=30)


async def test_hover_symptom_and_regex(client: LanguageClient):
    u = open_doc(client, BASE)
    text = BASE.read_text().split("\n")
    ln = text.index('name = "GPU_FELL_OFF"')
    h = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=u), position=T.Position(line=ln, character=10)))
    assert h is not None
    assert "outcome: `hardware`" in h.contents.value and "emitted by: `GpuFellOff`" in h.contents.value
    ln = text.index("match_re = 'GPU has fallen off the bus'")
    h = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=u), position=T.Position(line=ln, character=16)))
    assert h is not None and "required literals" in h.contents.value and "prefilter" in h.contents.value


async def test_code_lens_and_run_tests_command(client: LanguageClient):
    u = open_doc(client, BASE)
    lenses = await client.text_document_code_lens_async(T.CodeLensParams(text_document=T.TextDocumentIdentifier(uri=u)))
    run = [x for x in lenses if x.command and x.command.title.startswith("▶ Run all tests in file")]
    assert run, [x.command.title for x in lenses]
    result = await client.workspace_execute_command_async(T.ExecuteCommandParams(
        command=run[0].command.command, arguments=run[0].command.arguments))
    assert result["failed"] == 0 and result["total"] == 3  # the file's 3 inline cases
    lenses = await client.text_document_code_lens_async(T.CodeLensParams(text_document=T.TextDocumentIdentifier(uri=u)))
    titles = [x.command.title for x in lenses if x.command]
    assert "2/2 passed" in titles and "1/1 passed" in titles


async def test_run_all_tests_workspace_command(client: LanguageClient):
    shown = client.protocol.wait_for_notification_async(T.WINDOW_SHOW_MESSAGE)
    result = await client.workspace_execute_command_async(T.ExecuteCommandParams(command="rulekit.runAllTests"))
    assert result["total"] == 6 and result["failed"] == 0
    msg = await asyncio.wait_for(shown, 10)
    assert "6/6 tests passed" in msg.message


async def test_definition_across_files(client: LanguageClient):
    u = open_doc(client, EXTRA)
    lines = EXTRA.read_text().split("\n")
    ln = lines.index("  requires GpuFellOff")
    locs = await client.text_document_definition_async(T.DefinitionParams(
        text_document=T.TextDocumentIdentifier(uri=u), position=T.Position(line=ln, character=14)))
    assert locs and locs[0].uri == uri(BASE)
    assert BASE.read_text().split("\n")[locs[0].range.start.line] == 'name = "GpuFellOff"'


async def test_rename_rule_everywhere(client: LanguageClient):
    u = open_doc(client, BASE)
    ln = BASE.read_text().split("\n").index('name = "GpuFellOff"')
    edit = await client.text_document_rename_async(T.RenameParams(
        text_document=T.TextDocumentIdentifier(uri=u), position=T.Position(line=ln, character=10), new_name="GpuGone"))
    assert edit is not None
    assert set(edit.changes) == {uri(BASE), uri(EXTRA)}
    assert len(edit.changes[uri(BASE)]) == 2 and all(e.new_text == "GpuGone" for e in edit.changes[uri(BASE)])


async def test_completion_symptoms_in_emit(client: LanguageClient):
    u = open_doc(client, BASE)
    text = BASE.read_text()
    partial = text.replace('symptom = "NCCL_TIMEOUT" }', 'symptom = "')
    change(client, u, partial, 20)
    ln = partial.split("\n").index('emit = { type = "bad_node", symptom = "')
    res = await client.text_document_completion_async(T.CompletionParams(
        text_document=T.TextDocumentIdentifier(uri=u), position=T.Position(line=ln, character=39)))
    labels = [i.label for i in (res.items if isinstance(res, T.CompletionList) else res)]
    assert {"GPU_FELL_OFF", "NCCL_TIMEOUT", "DATALOADER_KILLED", "HOST_OOM"} <= set(labels)
    change(client, u, text, 21)


async def test_formatting_dsl(client: LanguageClient):
    u = open_doc(client, EXTRA)
    messy = EXTRA.read_text().replace("  match /", "      match   /").replace("  rank 500", "rank    500")
    change(client, u, messy, 30)
    edits = await client.text_document_formatting_async(T.DocumentFormattingParams(
        text_document=T.TextDocumentIdentifier(uri=u), options=T.FormattingOptions(tab_size=2, insert_spaces=True)))
    assert edits and "  match /DataLoader" in edits[0].new_text and "# Fixture corpus" in edits[0].new_text
    change(client, u, EXTRA.read_text(), 31)


async def test_prepare_rename_and_family_member_name(client: LanguageClient):
    u = open_doc(client, EXTRA)
    lines = EXTRA.read_text().split("\n")
    ln = next(i for i, line in enumerate(lines) if line.startswith("extractor DataLoaderKilled"))
    got = await client.text_document_prepare_rename_async(T.PrepareRenameParams(
        text_document=T.TextDocumentIdentifier(uri=u), position=T.Position(line=ln, character=12)))
    assert got is not None and got.placeholder == "DataLoaderKilled"
    assert (got.range.start.character, got.range.end.character) == (10, 26)
