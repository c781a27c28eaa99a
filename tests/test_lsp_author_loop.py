"""The rule author's loop in the editor, over stdio with a real LSP client (pytest-lsp):
a job's log shows the error lines no rule explains (RK640, capped with an RK641), the
code action drafts a checked rule from one of them into a rule file the author picks,
after which `rulekit check` and `rulekit test` pass and the line is explained; hover
and code lens show a rule's numbers from a result store built by the Blueprint, and
a store that cannot be read is one warning, never a crash."""
from __future__ import annotations

import asyncio
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient

REPO = Path(__file__).resolve().parent.parent
SERVER = [sys.executable, "-m", "rulekit_lsp.server"]

pytestmark = pytest.mark.asyncio(loop_scope="module")

OWN = '''[[symptom]]
name = "FROB_DISK_FULL"
outcome = "infrastructure"
sub_domain = "storage"
rank = 500
blame = "node"
docs = "the frobnicator's disk is full"

[[extractor]]
name = "FrobDiskFull"
match_re = 'frobnicator: disk full on (?P<device>\\S+)'
docs = "a full disk"
emit = { type = "bad_node", symptom = "FROB_DISK_FULL" }

[[extractor.test]]
line = "ERROR frobnicator: disk full on /dev/sda1"
symptom = "FROB_DISK_FULL"

[[extractor.test]]
line = "frobnicator: disk fine on /dev/sda1"
expect = "nothing"
'''
QUORUM = ["2026-06-01T03:10:11 ERROR frobnicator lost quorum on shard 12 after 4 retries",
          "2026-06-01T03:10:12 ERROR frobnicator lost quorum on shard 13 after 5 retries"]
TRAIN = "\n".join(["2026-06-01T03:00:00 INFO step 100 loss 2.31 errors=0",
                   "2026-06-01T03:10:01 ERROR frobnicator: disk full on /dev/sda1", *QUORUM]) + "\n"
WIDGET = "Jun  1 03:10:41 node0002 kernel: widgetd 0000:3b:00.0: sensor bank 3 read failed with error 0x1f\n"


def _workspace(root: Path) -> Path:
    """A rule folder (one TOML rule file and the generic fallback, as a plugin), a project
    file without the bundled corpus, and one job directory."""
    (root / "rules").mkdir(parents=True)
    shutil.copy(REPO / "bundled_rules" / "error_lines.py", root / "rules" / "errors.py")
    (root / "rules" / "own.toml").write_text(OWN)
    (root / "rulekit.toml").write_text("bundled = false\n")
    job = root / "jobs" / "job-1"
    (job / "applog").mkdir(parents=True)
    (job / "syslog").mkdir()
    (job / "job.toml").write_text('[job]\nid = "job-1"\nstate = "FAILED"\nnodes = ["node0001", "node0002"]\n'
                                  'tasks_per_node = 8\nstart = 2026-06-01T03:00:00Z\nend = 2026-06-01T03:31:10Z\n')
    (job / "applog" / "train.log").write_text(TRAIN)
    (job / "syslog" / "node0002.log").write_text(WIDGET)
    return root


def _store(root: Path) -> Path:
    """A result store the Blueprint writes by attributing the job with the workspace's rules,
    and one operator's confirmation of its verdict."""
    from rulekit.blueprint.config import load_config
    from rulekit.blueprint.orchestrator import Attributor, run
    from rulekit.blueprint.rulestats import record_feedback
    from rulekit.blueprint.store import open_db, upsert
    from rulekit.rules.loader import load_corpus

    cfg = root / "bp"
    (cfg / "jobs").mkdir(parents=True)
    (cfg / "jobs" / "jobs.toml").write_text(
        '[[job]]\nid = "job-1"\nstate = "FAILED"\nnodes = ["node0001", "node0002"]\ntasks_per_node = 8\n'
        'start = 2026-06-01T03:00:00Z\nend = 2026-06-01T03:31:10Z\nexit_code = "1:0"\n')
    (cfg / "blueprint.toml").write_text(
        f'[[context]]\ntype = "static"\nname = "t"\njobs = "jobs/jobs.toml"\n\n[[logs]]\ntype = "local"\n'
        f'name = "files"\nroot = "{root / "jobs"}/{{job_id}}"\n[[logs.files]]\nsource = "syslog"\n'
        f'glob = "syslog/{{node}}.log"\n[[logs.files]]\nsource = "applog"\nglob = "applog/*.log"\n')

    class Collect(list):
        def write(self, r):
            self.append(r)

        def close(self):
            pass

    out = Collect()
    run(load_config(cfg), Attributor(engine=load_corpus([root / "rules"]).engine), [out])
    assert [r["verdict"]["root_cause"]["rule"] for r in out] == ["FrobDiskFull"]
    db = root / "bp.db"
    con = open_db(db)
    for r in out:
        upsert(con, r)
    record_feedback(con, "job-1", "confirmed", who="operator")
    con.close()
    return db


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    root = _workspace(tmp_path_factory.mktemp("author") / "ws")
    _store(root)
    return root


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER), scope="module")
async def client(lsp_client: LanguageClient, ws: Path):
    lsp_client.applied = []  # type: ignore[attr-defined]

    @lsp_client.feature(T.WORKSPACE_APPLY_EDIT)
    def _apply(params: T.ApplyWorkspaceEditParams):
        lsp_client.applied.append(params.edit)  # type: ignore[attr-defined]
        return T.ApplyWorkspaceEditResult(applied=True)

    @lsp_client.feature(T.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params):
        return None

    @lsp_client.feature(T.CLIENT_REGISTER_CAPABILITY)
    def _register(params):  # the editor accepts the server's file watchers
        return None

    await lsp_client.initialize_session(T.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("visual-studio-code"), root_uri=ws.as_uri(),
        workspace_folders=[T.WorkspaceFolder(uri=ws.as_uri(), name="ws")],
        initialization_options={"debounceMs": 20, "lintDelayMs": 100, "store": "bp.db", "statsWindowDays": 0}))
    yield
    await lsp_client.shutdown_session()


async def until(pred, timeout: float = 60.0, what: str = "condition"):
    deadline = asyncio.get_event_loop().time() + timeout
    while True:
        got = pred()
        if got:
            return got
        if asyncio.get_event_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def open_doc(client: LanguageClient, path: Path, lang: str, text: str | None = None) -> str:
    client.text_document_did_open(T.DidOpenTextDocumentParams(text_document=T.TextDocumentItem(
        uri=path.as_uri(), language_id=lang, version=1, text=text if text is not None else path.read_text())))
    return path.as_uri()


def unexplained(client: LanguageClient, u: str) -> list[T.Diagnostic]:
    return [d for d in client.diagnostics.get(u, []) if d.code == "RK640"]


def apply_edits(text: str, edits: list[T.TextEdit]) -> str:
    lines = text.split("\n")

    def offset(p: T.Position) -> int:
        return sum(len(x) + 1 for x in lines[:p.line]) + p.character

    for e in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        a, b = offset(e.range.start), offset(e.range.end)
        text = text[:a] + e.new_text + text[b:]
    return text


def apply_workspace_edit(edit: T.WorkspaceEdit) -> list[Path]:
    """What an editor does with the edit, then saves: the files written."""
    written = []
    for uri, edits in (edit.changes or {}).items():
        p = Path(uri.removeprefix("file://"))
        p.write_text(apply_edits(p.read_text(), edits))
        written.append(p)
    for ch in edit.document_changes or []:
        p = Path(ch.uri.removeprefix("file://")) if isinstance(ch, T.CreateFile) else \
            Path(ch.text_document.uri.removeprefix("file://"))
        if isinstance(ch, T.CreateFile):
            assert not p.exists()
            p.write_text("")
        else:
            p.write_text(apply_edits(p.read_text(), ch.edits))
        written.append(p)
    return written


def saved(client: LanguageClient, paths: list[Path], created: bool = False, open_: dict | None = None) -> None:
    """What the editor tells the server after applying and saving: a change and a save of a
    document it has open (`open_`: uri -> version), a file event for the others."""
    for p in paths:
        if open_ is not None and p.as_uri() in open_:
            u = p.as_uri()
            open_[u] += 1
            client.text_document_did_change(T.DidChangeTextDocumentParams(
                text_document=T.VersionedTextDocumentIdentifier(uri=u, version=open_[u]),
                content_changes=[T.TextDocumentContentChangeWholeDocument(text=p.read_text())]))
            client.text_document_did_save(T.DidSaveTextDocumentParams(text_document=T.TextDocumentIdentifier(uri=u)))
        else:
            client.workspace_did_change_watched_files(T.DidChangeWatchedFilesParams(changes=[
                T.FileEvent(uri=p.as_uri(), type=T.FileChangeType.Created if created else T.FileChangeType.Changed)]))


def rulekit(ws: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rulekit", *args], cwd=ws, capture_output=True, text=True,
                          timeout=300)


# ---- rule statistics from the store ----------------------------------------------------------

def _at(path: Path, needle: str) -> T.Position:
    for i, line in enumerate(path.read_text().split("\n")):
        if needle in line:
            return T.Position(line=i, character=line.index(needle) + 2)
    raise AssertionError(needle)


async def test_hover_and_lens_show_a_rules_numbers_from_the_store(client: LanguageClient, ws: Path):
    own = ws / "rules" / "own.toml"
    u = open_doc(client, own, "toml")
    h = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=u), position=_at(own, '"FrobDiskFull"')))
    md = h.contents.value
    assert "extractor `FrobDiskFull`" in md and "**in production** (whole store, 1 attempt(s) in `bp.db`)" in md
    assert "- fired in 1 attempt(s)" in md and "- root cause in 1" in md
    assert "precision 100% (1/1 confirmed)" in md
    lenses = await client.text_document_code_lens_async(T.CodeLensParams(text_document=T.TextDocumentIdentifier(uri=u)))
    titles = [x.command.title for x in lenses if x.command]
    assert "production: fired in 1/1 attempts · root cause in 1 · precision 100% (1/1 confirmed) (whole store)" \
        in titles
    (lens,) = [x for x in lenses if x.command and x.command.title.startswith("production")]
    assert lens.range.start.line == _at(own, 'name = "FrobDiskFull"').line  # on the rule, as its test lens


async def test_an_unreadable_store_is_one_warning_never_a_crash(client: LanguageClient, ws: Path):
    own = ws / "rules" / "own.toml"
    u = own.as_uri()
    bad = ws / "corrupt.db"
    bad.write_bytes(b"this is not a database" * 100)
    hover_at = T.HoverParams(text_document=T.TextDocumentIdentifier(uri=u), position=_at(own, '"FrobDiskFull"'))
    for setting, why in (("corrupt.db", "cannot be read"), ("missing.db", "no such result store")):
        client.workspace_did_change_configuration(T.DidChangeConfigurationParams(settings={"rulekit": {
            "debounceMs": 20, "lintDelayMs": 100, "store": setting, "statsWindowDays": 0}}))
        before = len(client.messages)
        h = await client.text_document_hover_async(hover_at)
        assert "extractor `FrobDiskFull`" in h.contents.value and "unavailable" in h.contents.value
        lenses = await client.text_document_code_lens_async(
            T.CodeLensParams(text_document=T.TextDocumentIdentifier(uri=u)))
        assert not [x for x in lenses if x.command and x.command.title.startswith("production")]
        await client.text_document_hover_async(hover_at)
        said = [m.message for m in client.messages[before:] if "RK642" in m.message]
        assert len(said) == 1 and why in said[0] and setting in said[0], said  # once, however often asked
    # a store a writer holds locked: read-only, bounded wait, the same one warning
    con = sqlite3.connect(ws / "bp.db")
    con.execute("PRAGMA journal_mode=DELETE")
    con.execute("BEGIN EXCLUSIVE")
    try:
        client.workspace_did_change_configuration(T.DidChangeConfigurationParams(settings={"rulekit": {
            "debounceMs": 20, "lintDelayMs": 100, "store": "bp.db", "statsWindowDays": 0}}))
        h = await client.text_document_hover_async(hover_at)
        assert "unavailable" in h.contents.value and "locked" in h.contents.value
    finally:
        con.rollback()
        con.close()
    h = await client.text_document_hover_async(hover_at)
    # the lock gone and the file unchanged, the numbers stay cached until REFRESH_S or a change: edit the
    # store's mtime the way a writer would
    (ws / "bp.db").touch()
    h = await client.text_document_hover_async(hover_at)
    assert "- fired in 1 attempt(s)" in h.contents.value


# ---- unexplained lines and drafts ------------------------------------------------------------

async def test_a_jobs_log_shows_its_unexplained_error_lines(client: LanguageClient, ws: Path):
    train = ws / "jobs" / "job-1" / "applog" / "train.log"
    u = open_doc(client, train, "plaintext")  # in a job directory: whatever the editor calls it
    got = await until(lambda: unexplained(client, u), what="RK640 on train.log")
    assert [d.range.start.line for d in got] == [2, 3]  # the disk-full line is read by FrobDiskFull
    d = got[0]
    assert d.severity == T.DiagnosticSeverity.Information and d.source == "rulekit"
    assert "`program`" in d.message and "frobnicator lost quorum on shard <NUM> after <NUM> retries" in d.message
    assert d.range.end.character == len(QUORUM[0])
    # a loose file the editor calls `log`, outside any job directory
    loose = ws / "loose.txt"
    lu = open_doc(client, loose, "log", "all fine\n" + WIDGET)
    got = await until(lambda: unexplained(client, lu), what="RK640 on a loose log")
    assert [x.range.start.line for x in got] == [1]
    # an editing of the log itself is read again
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        text_document=T.VersionedTextDocumentIdentifier(uri=lu, version=2),
        content_changes=[T.TextDocumentContentChangeWholeDocument(text="all fine\nstill fine\n")]))
    await until(lambda: not unexplained(client, lu), what="the edited loose log to have none")
    client.text_document_did_close(T.DidCloseTextDocumentParams(text_document=T.TextDocumentIdentifier(uri=lu)))


async def test_many_lines_are_capped_and_a_big_log_does_not_freeze_the_server(client: LanguageClient, ws: Path):
    big = ws / "jobs" / "job-1" / "applog" / "big.log"
    filler = "2026-06-01T03:00:00 INFO step 100 loss 2.31 all nominal on every rank of the job\n" * 60_000
    errors = "".join(f"2026-06-01T03:10:11 ERROR spindle {i} jammed in bay {i % 7}\n" for i in range(400))
    text = filler + errors + filler
    big.write_text(text)
    u = open_doc(client, big, "log", text)
    own = ws / "rules" / "own.toml"
    t0 = asyncio.get_event_loop().time()
    h = await client.text_document_hover_async(T.HoverParams(  # answered while the log is being read
        text_document=T.TextDocumentIdentifier(uri=own.as_uri()), position=_at(own, '"FrobDiskFull"')))
    assert h is not None and asyncio.get_event_loop().time() - t0 < 5
    diags = await until(lambda: client.diagnostics.get(u), timeout=120, what="diagnostics of the big log")
    assert sum(d.code == "RK640" for d in diags) == 200
    (note,) = [d for d in diags if d.code == "RK641"]
    assert "200 of 400 unexplained error lines shown" in note.message and note.range.start.line == 0
    client.text_document_did_close(T.DidCloseTextDocumentParams(text_document=T.TextDocumentIdentifier(uri=u)))
    await until(lambda: len(client.diagnostics.get(u, [None])) == 0, what="a closed log's diagnostics cleared")
    big.unlink()


async def test_draft_a_rule_from_a_line_into_a_rule_file(client: LanguageClient, ws: Path):
    train = ws / "jobs" / "job-1" / "applog" / "train.log"
    u = train.as_uri()
    d = (await until(lambda: unexplained(client, u)))[0]
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=u), range=d.range, context=T.CodeActionContext(diagnostics=[d])))
    titles = [a.title for a in actions]
    assert titles == ["Draft a rule from this line into rules/own.toml",
                      "Draft a rule from this line into rules/drafts.toml (new file)"]
    assert all(a.edit is None and a.data for a in actions)  # made and checked when chosen
    done = await client.code_action_resolve_async(actions[0])
    assert done.command is None and done.edit is not None
    (edits,) = done.edit.changes.values()
    (e,) = edits
    assert "[[extractor]]" in e.new_text and f'line = "{QUORUM[0]}"' in e.new_text and "CONFIRM" in e.new_text
    written = apply_workspace_edit(done.edit)
    assert written == [ws / "rules" / "own.toml"] and (ws / "rules" / "own.toml").read_text().startswith(OWN)
    p = rulekit(ws, "check", "rules")
    assert p.returncode == 0, p.stdout + p.stderr
    p = rulekit(ws, "test", "rules")
    assert p.returncode == 0 and "0 failed" in p.stdout, p.stdout + p.stderr
    saved(client, written, open_={(ws / "rules" / "own.toml").as_uri(): 1})  # opened by the stats test
    # both lines of the template are explained now; the draft rule reads them
    await until(lambda: u in client.diagnostics and not unexplained(client, u), what="train.log explained")


async def test_draft_into_a_new_file_through_the_command(client: LanguageClient, ws: Path):
    node = ws / "jobs" / "job-1" / "syslog" / "node0002.log"
    u = open_doc(client, node, "log")
    d = (await until(lambda: unexplained(client, u), what="RK640 on node0002.log"))[0]
    assert "`host`" in d.message and d.data["node"] == "node0002" and d.data["source"] == "syslog"
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=u), range=d.range, context=T.CodeActionContext(diagnostics=[d])))
    new = actions[-1]
    assert new.title == "Draft a rule from this line into rules/drafts.toml (new file)"
    # a client without codeAction/resolve gets the action as a command (`rulekit.draftRule` with the
    # action's data) that makes the server apply the edit
    assert new.command is None  # this client resolves
    got = await client.workspace_execute_command_async(T.ExecuteCommandParams(
        command="rulekit.draftRule", arguments=[new.data]))
    assert got["applied"] is True
    (edit,) = client.applied  # type: ignore[attr-defined]
    create, change = edit.document_changes
    assert isinstance(create, T.CreateFile) and create.uri == (ws / "rules" / "drafts.toml").as_uri()
    assert 'source = "syslog"' in change.edits[0].new_text and "(?P<pci>" in change.edits[0].new_text
    written = apply_workspace_edit(edit)
    p = rulekit(ws, "check", "rules")
    assert p.returncode == 0, p.stdout + p.stderr
    p = rulekit(ws, "test", "rules")
    assert p.returncode == 0, p.stdout + p.stderr
    saved(client, written, created=True)
    await until(lambda: u in client.diagnostics and not unexplained(client, u), what="node0002.log explained")


async def test_a_draft_into_a_file_outside_the_corpus_is_refused(client: LanguageClient, ws: Path):
    """The resolved action has no edit and the server says why."""
    before = len(client.messages)
    act = T.CodeAction(title="Draft a rule from this line into rules/own.toml", data={
        "uri": (ws / "jobs" / "job-1" / "applog" / "train.log").as_uri(), "target": str(ws / "rules" / "nope.toml"),
        "line": {"line": "ERROR x", "line_num": 1, "source": "applog"}})
    done = await client.code_action_resolve_async(act)
    assert done.edit is None
    await until(lambda: any("not a rule file of the corpus" in m.message for m in client.messages[before:]))
