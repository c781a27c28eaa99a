"""The language server never crashes on partial or garbage documents.

Bulk: hypothesis applies thousands of random edits (insertions and deletions of
random text, rule-language fragments and unicode) to TOML, DSL and Python rule
files through the workspace, and after every edit asks every feature function
for an answer.  Then a shorter run over the real stdio server: random
incremental `didChange` edits interleaved with requests, checking that every
request is answered and diagnostics keep being published."""
from __future__ import annotations

import asyncio
import random
import shutil
import sys
from pathlib import Path

import pytest
import pytest_lsp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient

from rulekit_lsp import convert
from rulekit_lsp.features import completion, editing, hover, lens, navigation, symbols, tokens
from rulekit_lsp.workspace import Corpus

FIX = Path(__file__).parent / "lsp_fixtures" / "ws"
FILES = ["base.toml", "extra.rule", "plugin.py", "jobs.test.toml"]
FRAGMENTS = ['"', "'", "[[", "]]", "{", "}", "=", "\n", "#", "/", "\\", "(?P<x>", "(?!", "emit", "symptom", "extractor",
             "match_re = '", 'name = "', "test ", "=>", "requires", "@filter_def(", "register_symptom(", "def ", ":",
             "GPU_FELL_OFF", "GpuFellOff", "ü", "𝔘", "\t", "\r\n", "\x00", "LATE", "priority=", ",", " "]

edit = st.tuples(st.floats(0, 1), st.integers(0, 12),
                 st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)))


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("robust") / "ws"
    shutil.copytree(FIX, d)
    return (d / "rules").resolve()


def exercise(c: Corpus, path: str, text: str, rnd: random.Random) -> None:
    lines = text.split("\n")
    line = rnd.randint(1, len(lines))
    col = rnd.randint(1, len(lines[line - 1]) + 1)
    c.diagnostics_by_file()
    hover.hover(c, path, line, col)
    completion.complete(c, path, text, line, col)
    symbols.document_symbols(c, path)
    symbols.workspace_symbols([c], "")
    navigation.definition(c, path, line, col)
    navigation.references(c, path, line, col)
    navigation.rename(c, path, line, col, "Renamed_X")
    lens.code_lenses(c, path, "file:///x")
    editing.code_actions(c, path, convert.from_range(path, text, T.Range(
        start=T.Position(line=0, character=0), end=T.Position(line=len(lines), character=0))))
    editing.format_document(path, text)
    if path.endswith(".rule"):
        convert.semantic_tokens(tokens.dsl_tokens(text, c.files[path].module), text)
    for d in c.diagnostics_by_file().get(path, []):
        convert.diagnostic(d, lambda p: c.files[p].text if p in c.files else None)


@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(which=st.sampled_from(FILES), edits=st.lists(edit, min_size=20, max_size=50), seed=st.integers(0, 2**16))
def test_random_edits_never_crash_features(corpus_dir: Path, which: str, edits, seed: int):
    c = Corpus([corpus_dir])
    path = str(corpus_dir / which)
    text = c.files[path].text
    rnd = random.Random(seed)
    for where, delete, insert in edits:
        at = int(where * len(text))
        text = text[:at] + insert + text[at + delete:]
        c.update(path, text)
        exercise(c, path, text, rnd)


# ---- the real server over stdio ------------------------------------------------------------------

@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "rulekit_lsp.server"]))
async def client(lsp_client: LanguageClient, tmp_path: Path):
    shutil.copytree(FIX, tmp_path / "ws")
    lsp_client.ws = (tmp_path / "ws").resolve()  # type: ignore[attr-defined]
    await lsp_client.initialize_session(T.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("neovim"), root_uri=lsp_client.ws.as_uri(),  # type: ignore
        initialization_options={"debounceMs": 5, "runTestsOnChange": True}))
    yield
    await lsp_client.shutdown_session()


async def test_server_survives_random_incremental_edits(client: LanguageClient):
    rnd = random.Random(7)
    ws: Path = client.ws  # type: ignore[attr-defined]
    for name in ("extra.rule", "base.toml", "plugin.py"):
        path = ws / "rules" / name
        uri = path.as_uri()
        text = path.read_text()
        client.text_document_did_open(T.DidOpenTextDocumentParams(text_document=T.TextDocumentItem(
            uri=uri, language_id="rulekit", version=1, text=text)))
        for version in range(2, 80):
            lines = text.split("\n")
            li = rnd.randrange(len(lines))
            ci = rnd.randint(0, len(lines[li]))
            insert = rnd.choice(FRAGMENTS) if rnd.random() < 0.8 else "".join(rnd.choice("ab{}\"'[]=\n") for _ in range(5))
            delete = rnd.randint(0, 3) if ci + 3 <= len(lines[li]) else 0
            start = T.Position(line=li, character=convert.utf16_len(lines[li][:ci]))
            end = T.Position(line=li, character=convert.utf16_len(lines[li][:ci + delete]))
            lines[li] = lines[li][:ci] + insert + lines[li][ci + delete:]
            text = "\n".join(lines)
            client.text_document_did_change(T.DidChangeTextDocumentParams(
                text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[T.TextDocumentContentChangePartial(range=T.Range(start=start, end=end), text=insert)]))
            if version % 5 == 0:
                p = T.Position(line=li, character=0)
                tdi = T.TextDocumentIdentifier(uri=uri)
                await asyncio.wait_for(client.text_document_hover_async(T.HoverParams(text_document=tdi, position=p)), 10)
                await asyncio.wait_for(client.text_document_completion_async(
                    T.CompletionParams(text_document=tdi, position=p)), 10)
                await asyncio.wait_for(client.text_document_document_symbol_async(
                    T.DocumentSymbolParams(text_document=tdi)), 10)
                await asyncio.wait_for(client.text_document_code_lens_async(T.CodeLensParams(text_document=tdi)), 10)
        # the server's view of the text is the client's: a final request sees the last version
        res = await asyncio.wait_for(client.text_document_document_symbol_async(
            T.DocumentSymbolParams(text_document=T.TextDocumentIdentifier(uri=uri))), 10)
        assert res is not None
        # published once the corpus's plugins are probed (a child process: seconds on a loaded
        # machine, and nothing is published before, not to show false RK203s): wait for it
        deadline = asyncio.get_event_loop().time() + 60
        while uri not in client.diagnostics and asyncio.get_event_loop().time() < deadline:
            await asyncio.sleep(0.05)
        assert uri in client.diagnostics
    errors = [m.message for m in client.log_messages if m.type == T.MessageType.Error]
    assert errors == []
    shown = [m.message for m in client.messages if m.type == T.MessageType.Error]
    assert shown == []
