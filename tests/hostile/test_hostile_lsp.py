"""The language server against one hostile line: a long literal in a pattern costs
time linear in its length (it was quadratic: 10,000 characters took seconds per
hover, 40,000 over a minute), and a lone UTF-16 surrogate, which JSON lets a
client send, neither breaks position conversion nor stops the document's
diagnostics from being published."""
from __future__ import annotations

import asyncio
import shutil
import sys
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient

from rulekit.extract import literals
from rulekit_lsp import convert
from rulekit_lsp.features import hover, tokens
from rulekit_lsp.workspace import Corpus

FIX = Path(__file__).resolve().parent.parent / "lsp_fixtures" / "ws"
SHAPES = ["x{L}y", "(?i){L}", "({L})+", "[ab]{L}", "(?P<g>{L})\\d+"]


def _analysis_seconds(n: int, shape: str) -> float:
    pat = shape.replace("{L}", "ab" * (n // 2))
    hover.regex_analysis.cache_clear()
    literals.factors_of.cache_clear()
    t0 = time.perf_counter()
    hover.regex_analysis(pat)
    return time.perf_counter() - t0


@pytest.mark.parametrize("shape", SHAPES)
def test_a_long_literal_in_a_pattern_is_analysed_in_linear_time(shape, monkeypatch):
    monkeypatch.setenv("RULEKIT_CACHE_DIR", "")  # no disk cache: every analysis is computed
    small = min(_analysis_seconds(5_000, shape) for _ in range(2))
    big = min(_analysis_seconds(40_000, shape) for _ in range(2))
    print(f"{shape}: 5k {small:.3f} s, 40k {big:.3f} s")
    # 8x the length: linear is ~8x, quadratic ~64x (it took 11 s at 20k before); room for a shared machine
    assert big < 5.0, big
    assert big < max(small, 0.02) * 24, (small, big)


def test_keys_of_a_long_literal_are_cut_and_still_required():
    f = literals.factors_of("x" + "ab" * 5000 + "y")
    assert f and all(len(k) <= literals.MAX_KEY for factor in f for k in factor)
    assert all(k in ("x" + "ab" * 5000 + "y").encode() for factor in f for k in factor)


@pytest.fixture()
def corpus_dir(tmp_path: Path) -> Path:
    shutil.copytree(FIX, tmp_path / "ws")
    return (tmp_path / "ws" / "rules").resolve()


@pytest.mark.parametrize("name", ["extra.rule", "base.toml", "plugin.py"])
def test_a_lone_surrogate_does_not_break_positions(corpus_dir: Path, name: str):
    c = Corpus([corpus_dir])
    path = str(corpus_dir / name)
    text = "# \ud800 lone\n" + c.files[path].text + "\nbroken \ud83d here\n"
    c.update(path, text)
    diags = c.diagnostics_by_file().get(path, [])
    assert diags, "the broken line gives a diagnostic"
    for d in diags:
        convert.diagnostic(d, lambda p: c.files[p].text if p in c.files else None)
    if name.endswith(".rule"):
        convert.semantic_tokens(tokens.dsl_tokens(text, c.files[path].module), text)
    assert convert.utf16_len("a\ud800b") == 3 and convert.utf16_len("a\U0001d518") == 3
    assert convert.from_position(text, T.Position(line=0, character=3)) == (1, 4)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "rulekit_lsp.server"]))
async def client(lsp_client: LanguageClient, tmp_path: Path):
    shutil.copytree(FIX, tmp_path / "ws")
    lsp_client.ws = (tmp_path / "ws").resolve()  # type: ignore[attr-defined]
    await lsp_client.initialize_session(T.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("neovim"), root_uri=lsp_client.ws.as_uri(),  # type: ignore
        initialization_options={"debounceMs": 5}))
    yield
    await lsp_client.shutdown_session()


async def test_the_server_publishes_diagnostics_of_a_document_with_a_lone_surrogate(client: LanguageClient):
    path = client.ws / "rules" / "base.toml"  # type: ignore[attr-defined]
    uri = path.as_uri()
    # the surrogate before the error's column on its line: converting that position raised
    text = "# \ud800 lone surrogate\n" + path.read_text() + "\nbroken \ud83d here\n"
    client.text_document_did_open(T.DidOpenTextDocumentParams(text_document=T.TextDocumentItem(
        uri=uri, language_id="toml", version=1, text=text)))
    deadline = asyncio.get_event_loop().time() + 60
    while not client.diagnostics.get(uri) and asyncio.get_event_loop().time() < deadline:
        await asyncio.sleep(0.05)
    assert client.diagnostics.get(uri), "the document's diagnostics were published"
    res = await asyncio.wait_for(client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=uri), position=T.Position(line=0, character=3))), 20)
    del res  # answered (possibly nothing to show), not an error
    errors = [m.message for m in client.log_messages if m.type == T.MessageType.Error]
    assert errors == []
