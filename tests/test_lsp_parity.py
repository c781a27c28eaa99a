"""Parity: the language server reports exactly what `rulekit check --format json`
plus `rulekit lint --format json` report, for the bundled corpus, the LSP fixture
corpora and the "every check fires" fixture (`tests/fixtures/every_check/`).

The CLI is run as a subprocess; `rulekit lint` is included when the CLI has
that command (the toolkit helper is adding it), otherwise the comparison is
check-only and says so in the test id's skip message for the lint part.
Checked twice: through the workspace's pure analysis, and through the real
server over stdio (diagnostics as published, converted back to rulekit spans).

Both sides are told to load the bundled corpus underneath (`--bundled`, the server's
`bundled` setting): a project file decides otherwise only where it is found, from the
CLI's working folder but from the server's workspace root (`tests/lsp_fixtures/ws`
has one that says `bundled = false`), and the comparison is of one corpus.
"""
from __future__ import annotations

import asyncio
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient

from rulekit.rules.loader import bundled_rules_path
from rulekit_lsp import convert
from rulekit_lsp.settings import Settings
from rulekit_lsp.workspace import Corpus

TESTS = Path(__file__).parent
RULEKIT = Path(sys.executable).parent / "rulekit"
EVERY = TESTS / "fixtures" / "every_check"
CORPORA = {  # name -> (folder, lint settings file, benign sample)
    "bundled": (bundled_rules_path(), None, None),
    "lsp-ws": (TESTS / "lsp_fixtures" / "ws" / "rules", None, None),
    "lsp-broken": (TESTS / "lsp_fixtures" / "broken", None, None),
    "every_check-check": (EVERY / "check", None, None),
    "every_check-lint": (EVERY / "lint", EVERY / "lint_settings.toml", EVERY / "benign.log"),
    "every_check-empty": (EVERY / "empty", None, None),
}


@functools.lru_cache(maxsize=None)
def cli_has(command: str) -> bool:
    r = subprocess.run([str(RULEKIT), command, "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    return r.returncode == 0


ROOT = TESTS.parent


def absolute(file: str | None) -> str | None:
    """The CLI renders paths relative to its working directory (ROOT); compare absolute paths."""
    return str((ROOT / file).resolve()) if file else file


def key(d: dict) -> tuple:
    s = d.get("span") or {}
    rel = tuple(sorted((absolute(r["span"]["file"]), r["span"]["line"], r["span"]["col"], r["message"])
                       for r in d.get("related", []) if r.get("span")))
    return (d["code"], d["severity"], d["message"], absolute(s.get("file")), s.get("line"), s.get("col"),
            s.get("end_line"), s.get("end_col"), rel)


def start_cli(name: str) -> list[tuple[str, subprocess.Popen]]:
    """`rulekit check` and `rulekit lint` on a corpus, started concurrently."""
    folder, config, sample = CORPORA[name]
    procs = []
    for cmd in ["check"] + (["lint"] if cli_has("lint") else []):
        # lint as the server runs it: no pattern timing (RK308), no test run (coverage comes after "run all tests")
        extra = ["--no-cost", "--no-tests"] if cmd == "lint" else []
        extra += ["--bundled"]  # as the server is configured below, whatever a project file says
        if cmd == "lint" and config:
            extra += ["--config", str(config)]
        if cmd == "lint" and sample:
            extra += ["--sample", str(sample)]
        procs.append((cmd, subprocess.Popen([str(RULEKIT), cmd, "--format", "json", *extra, str(folder)],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)))
    return procs


_CLI_CACHE: dict[str, set[tuple]] = {}


def cli_for(name: str) -> "set[tuple] | list[tuple[str, subprocess.Popen]]":
    """The CLI's findings for a corpus: cached, or the running processes to collect."""
    return _CLI_CACHE.get(name) or start_cli(name)


def collect(name: str, got) -> set[tuple]:
    if isinstance(got, set):
        return got
    _CLI_CACHE[name] = cli_results(got)
    return _CLI_CACHE[name]


def cli_results(procs: list[tuple[str, subprocess.Popen]]) -> set[tuple]:
    out: set[tuple] = set()
    for cmd, p in procs:
        stdout, stderr = p.communicate(timeout=300)
        if cmd == "lint" and p.returncode == 2 and "does not load" in stderr:
            continue  # lint refuses a corpus with errors; so does the server
        assert p.returncode in (0, 1), stderr
        out |= {key(d) for d in json.loads(stdout)["diagnostics"]}
    return out


def folder_or_skip(name: str) -> Path:
    folder = CORPORA[name][0].resolve()
    if not folder.is_dir():
        pytest.skip(f"{folder} does not exist yet (the toolkit helper's fixture)")
    return folder


@pytest.mark.parametrize("name", list(CORPORA))
def test_workspace_diagnostics_equal_cli(name: str):
    folder = folder_or_skip(name)
    procs = cli_for(name)
    _, config, sample = CORPORA[name]
    # as `rulekit check DIR` and the server load a folder: the bundled rules underneath (unless it is them)
    under = [] if folder == bundled_rules_path().resolve() else [bundled_rules_path()]
    c = Corpus([folder], Settings(bundled=True, lint_config=str(config) if config else None,
                                  sample_log=str(sample) if sample else None), context=under)
    mine = {key(d.to_dict()) for ds in c.diagnostics_by_file().values() for d in ds}
    if cli_has("lint"):
        job = c.lint_job()
        c.apply_lint(job, job.run())
        mine = {key(d.to_dict()) for ds in c.diagnostics_by_file().values() for d in ds}
    assert mine == collect(name, procs)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "rulekit_lsp.server"]),
                    params=["lsp-broken", "lsp-ws", "every_check-check", "every_check-lint", "bundled"])
async def client(lsp_client: LanguageClient, request):
    @lsp_client.feature(T.CLIENT_REGISTER_CAPABILITY)
    def _register(params):  # the editor accepts the server's file watchers
        lsp_client.registrations = params.registrations  # type: ignore[attr-defined]
        return None

    @lsp_client.feature(T.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params):
        return None

    folder = folder_or_skip(request.param)
    _, config, sample = CORPORA[request.param]
    lsp_client.folder = folder  # type: ignore[attr-defined]
    lsp_client.corpus_name = request.param  # type: ignore[attr-defined]
    lsp_client.procs = cli_for(request.param)  # type: ignore[attr-defined]
    await lsp_client.initialize_session(T.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("visual-studio-code"), root_uri=folder.as_uri(),
        initialization_options={"ruleFolders": [str(folder)], "bundled": True, "lintDelayMs": 10,
                                "runTestsOnChange": False,
                                "lintConfig": str(config) if config else None,
                                "sampleLog": str(sample) if sample else None}))
    yield
    await lsp_client.shutdown_session()


async def test_published_diagnostics_equal_cli(client: LanguageClient):
    folder: Path = client.folder  # type: ignore[attr-defined]
    want = collect(client.corpus_name, client.procs)  # type: ignore[attr-defined]
    files = sorted(p for p in folder.iterdir() if p.suffix in (".toml", ".rule", ".py"))

    def published() -> set[tuple]:
        got = set()
        for f in files:
            text = f.read_text(errors="replace")
            for d in client.diagnostics.get(f.as_uri(), []):
                span = convert.from_range(str(f), text, d.range)
                rel = tuple(sorted((convert.uri_to_path(r.location.uri),
                                    *convert.from_position(Path(convert.uri_to_path(r.location.uri)).read_text(errors="replace"),
                                                           r.location.range.start), r.message)
                                   for r in (d.related_information or [])))
                sev = {1: "error", 2: "warning", 3: "info", 4: "hint"}[int(d.severity)]
                got.add((d.code, sev, d.message, str(f), span.line, span.col, span.end_line, span.end_col, rel))
        return got

    deadline = asyncio.get_event_loop().time() + 90  # lint of the bundled corpus with its catalogs: tens of seconds
    while published() != want and asyncio.get_event_loop().time() < deadline:
        await asyncio.sleep(0.1)
    assert published() == want


def test_unreadable_and_undecodable_files_read_as_the_loader_reads_them(tmp_path: Path):
    """The server reads rule files with the loader's own reader (issue 19): the same RK001
    for a file that is not UTF-8 and a DSL file with a broken declaration, the same
    partial compile, as `load_corpus`."""
    from rulekit.rules.loader import load_corpus

    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "a.toml").write_text('author = "t"\n[[symptom]]\nname = "S"\noutcome = "hardware"\nsub_domain = "gpu"\n'
                                   'rank = 1\nblame = "node"\n')
    (folder / "latin1.toml").write_bytes(b'author = "caf\xe9"\n[[symptom]]\nname = "T"\n')
    (folder / "b.rule").write_text('extractor Half {\n  match /x/\n  emit bad_node "S"\n  test "x" =>\n}\n'
                                   'extractor Whole {\n  match /y/\n  emit bad_node "NOPE"\n}\n')
    want = sorted((d.code, str(d.span), d.message) for d in load_corpus([folder]).diagnostics)
    c = Corpus([folder])
    got = sorted((d.code, str(d.span), d.message) for ds in c.diagnostics_by_file().values() for d in ds)
    got += sorted((d.code, str(d.span), d.message) for d in c.folder_diags if d.span and d.span.file not in c.files)
    assert sorted(set(got)) == sorted(set(want))
    assert any(code == "RK001" and "not UTF-8" in msg for code, _, msg in want)
