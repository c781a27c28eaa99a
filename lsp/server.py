"""The rulekit language server: pygls 2.x wiring only.

Each handler converts LSP params to rulekit terms (through `convert`), calls a
pure function of the workspace index or a feature module, and converts the
result back (`where()` does the common "which document, which corpus, which
position" part).  When things run is `scheduling`'s: diagnostics are debounced
per document and published first; inline tests and lint run afterwards in a
worker thread on immutable snapshots, superseded by newer edits, and publish
again for the same version.  No analysis lives here.
"""
from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass
from typing import Any

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer

from rulekit_lsp import __version__, convert, memory
from rulekit_lsp.features import TOKEN_MODIFIERS, TOKEN_TYPES, editing, hover, inlay, lens, navigation, symbols, tokens
from rulekit_lsp.features import completion as completion_mod
from rulekit_lsp.features import logs as logs_mod
from rulekit_lsp.features import stats as stats_mod
from rulekit_lsp.scheduling import Cancellable, Scheduler
from rulekit_lsp.settings import Settings, parse_settings
from rulekit.diagnostics import has_errors
from rulekit_lsp.workspace import FOREGROUND, Corpus, Workspace, file_kind

log = logging.getLogger("rulekit_lsp")


class RulekitLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("rulekit-lsp", __version__)
        self.ws = Workspace(defer_plugins=True)  # plugins are probed off the event loop (probe_plugins)
        self.probing: set[int] = set()  # corpora whose plugins are being probed
        self.settings = Settings()
        self.setting_problems: list[str] = []
        self.jobs = Scheduler()  # debounce timers, background tests and lint
        self.published: dict[str, tuple] = {}
        self.lens_refresh = False
        self.watch_files = False
        self.resolve_edit = False  # the client resolves a code action's edit (else: a command applies it)
        self.can_create = False  # the client's workspace edits may create files
        self.logs: dict[str, LogDoc] = {}  # uri -> a job's log open in the editor (unexplained lines)
        self.drafts: dict[tuple, Any] = {}  # (line, source, node, corpus state) -> DraftResult
        self.stats: stats_mod.StoreStats | None = None  # rule statistics of the configured store
        self.stats_said: set[str] = set()  # store problems already shown (once each)

    # ---- helpers ------------------------------------------------------------------------
    def doc_text(self, uri: str) -> str:
        return self.workspace.get_text_document(uri).source

    def text_of(self, path: str) -> str | None:
        return self.ws.text_of(path)

    def flush(self, uri: str) -> None:
        """Apply a pending (debounced) change now, so a request sees the current text."""
        if self.jobs.cancel(("change", uri)):
            self._apply_change(uri)

    def where(self, params: Any) -> "Where | None":
        """The document a request is about (its pending change applied first), its corpus,
        its text and, when the request has one, the position in rulekit terms; None
        when the document is no rule file of the workspace."""
        uri = params.text_document.uri
        path = convert.uri_to_path(uri)
        if path is None:
            return None
        self.flush(uri)
        c = self.ws.corpus_for(path, create=False)
        if c is None or path not in c.files:
            return None
        text = self.doc_text(uri)
        pos = getattr(params, "position", None)
        line, col = convert.from_position(text, pos) if pos is not None else (0, 0)
        return Where(c, path, uri, text, line, col)

    def _apply_change(self, uri: str) -> None:
        if uri in self.logs:
            self.logs[uri].version = self.workspace.get_text_document(uri).version
            self.spawn(self.read_log(uri))
            if not self.jobs.pending("change"):
                FOREGROUND.idle()
            return
        try:
            path = convert.uri_to_path(uri)
            if path is None:
                return
            doc = self.workspace.get_text_document(uri)
            c = self.ws.change(path, doc.source, doc.version)
            if c is not None:
                self.publish(c, force=path)
                self.after_edit(c, path)
        except Exception:  # noqa: BLE001 - a bug must not kill the server; say it in the log
            self.log_bug(f"analysing {uri}")
        finally:
            if not self.jobs.pending("change"):
                FOREGROUND.idle()

    def log_bug(self, what: str) -> None:
        import traceback

        log.exception("rulekit_lsp: error while %s", what)
        self.window_log_message(T.LogMessageParams(type=T.MessageType.Error,
                                                   message=f"rulekit_lsp: error while {what}:\n{traceback.format_exc()}"))

    def publish(self, corpus: Corpus, force: str | None = None) -> None:
        """Publish every file whose diagnostics changed (an edit can change other
        files'), and always the file `force` (just opened or edited)."""
        if corpus.awaiting and id(corpus) not in self.probing:
            self.spawn(self.probe_plugins(corpus))
        if corpus.initial_pending:
            return  # its plugins are still being probed: publishing now would show false RK203s
        if self.logs:  # the corpus may have changed: its logs' readings are checked (and redone) soon
            self.jobs.call_later(("logs",), LOGS_DELAY_S, lambda: [self.spawn(self.read_log(u)) for u in list(self.logs)])
        by_file = corpus.diagnostics_by_file()
        url = self.settings.code_docs_url
        for path, diags in by_file.items():
            key = tuple((d.code, d.span, d.message, d.severity) for d in diags)
            uri = convert.path_to_uri(path)
            if self.published.get(uri) == key and path != force:
                continue
            self.published[uri] = key
            st = corpus.files.get(path)
            version = st.version if st is not None and st.is_open else None
            self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(
                uri=uri, version=version, diagnostics=[convert.diagnostic(d, self.text_of, url) for d in diags]))

    def publish_all(self) -> None:
        for c in self.ws.corpora:
            self.publish(c)

    def reconfigure(self, roots: list[str]) -> None:
        """New roots or settings: rebuild the workspace (the old corpora's timers and
        jobs cancelled), republish, re-lint."""
        for c in self.ws.corpora:
            self.jobs.cancel_corpus(c)
        self.ws.configure(roots, self.settings)
        self.published.clear()
        self.configure_stats()
        for doc in self.logs.values():
            doc.key = None
        self.publish_all()
        by_file: dict[str, list] = {}
        for d in self.ws.project_problems:  # a bad rulekit.toml / [tool.rulekit]: on the file itself
            by_file.setdefault(d.span.file if d.span else "", []).append(d)
        for path, diags in by_file.items():
            if path:
                self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(
                    uri=convert.path_to_uri(path), diagnostics=[convert.diagnostic(d, self.text_of, self.settings.code_docs_url)
                                                                for d in diags]))
        memory.trim()
        for c in self.ws.corpora:
            self.schedule_lint(c)

    def after_edit(self, corpus: Corpus, path: str | None) -> None:
        if path and self.settings.run_tests_on_change and file_kind(path) in ("toml", "rule", "py", "tests"):
            # superseded by the next edit of this file: tests run for the text that is there
            self.spawn(self.run_tests(corpus, corpus.test_job(paths=[path], jobs=True), supersede=("tests", path)))
        self.schedule_lint(corpus)

    def schedule_lint(self, corpus: Corpus) -> None:
        if self.settings.lint:
            self.jobs.call_later(("lint", corpus), self.settings.lint_delay_ms / 1000,
                                 lambda: self.spawn(self.run_lint(corpus)))

    def spawn(self, coro):
        return self.jobs.spawn(coro)

    async def probe_plugins(self, corpus: Corpus) -> None:
        """Import the corpus's unverified plugins in a child process (rulekit.rules.sandbox,
        bounded by the plugin time limit) in a background thread, then execute the ones
        that passed here and republish: a plugin that never returns cannot stop the
        server answering."""
        from rulekit.rules import sandbox

        key = id(corpus)
        self.probing.add(key)
        try:
            while corpus.awaiting:
                items = dict(corpus.awaiting)
                timeout = self.settings.plugin_timeout_ms / 1000 if self.settings.plugin_timeout_ms else None
                try:
                    await self.jobs.background(lambda: sandbox.probe_plugins(list(items.items()), timeout))
                except Exception:  # noqa: BLE001
                    self.log_bug("probing plugins")
                    return
                for path, text in items.items():
                    if corpus.awaiting.get(path) == text:
                        del corpus.awaiting[path]
                    st = corpus.files.get(path)
                    if st is not None and st.text == text:
                        corpus.update(path, text, st.version, execute=True)
        finally:
            self.probing.discard(key)
        corpus.initial_pending = False
        if corpus not in self.ws.corpora:
            return
        self.publish(corpus)
        self.after_edit(corpus, None)
        if self.settings.run_tests_on_change:
            self.spawn(self.run_tests(corpus, corpus.test_job(paths=list(items), jobs=True)))

    async def run_tests(self, corpus: Corpus, job, supersede: tuple | None = None) -> dict[str, Any]:
        """One test run at a time per corpus (later runs hit the cache).  With `supersede`
        (a key: the automatic run after an edit of a file), a newer run of the same key
        replaces this one, dropped if queued, stopped at its next test if running."""
        try:
            if supersede is not None:
                ran, got = await self.jobs.latest((supersede[0], corpus, *supersede[1:]), job.stop, job.run)
                if not ran:
                    return {"passed": 0, "failed": 0, "total": 0, "failures": [], "superseded": True}
            else:
                got = await self.jobs.exclusive(corpus, job.run)
        except Exception:  # noqa: BLE001
            self.log_bug("running tests")
            return {"passed": 0, "failed": 0, "total": 0, "failures": [], "error": "the test run failed"}
        results, cache = got
        corpus.apply_tests(job, results, cache)
        if not job.complete:  # stopped for a newer edit, whose own run publishes: no work on the loop now
            return {"passed": 0, "failed": 0, "total": 0, "failures": [], "superseded": True}
        memory.trim()  # the compiled patterns of the tested rules are not needed until the next run
        if corpus not in self.ws.corpora:
            return {"passed": 0, "failed": 0, "total": 0, "failures": [], "error": "the rule folders changed"}
        self.publish(corpus)
        self.refresh_lenses()
        flat = [r for rs in results.values() for r in rs]
        failed = [r for r in flat if not r.passed]
        return {"passed": len(flat) - len(failed), "failed": len(failed), "total": len(flat),
                "failures": [{"name": r.name, "message": r.diagnostic().message,
                              "file": r.span.file if r.span else None, "line": r.span.line if r.span else None}
                             for r in failed[:50]]}

    async def run_lint(self, corpus: Corpus) -> None:
        """Lint the corpus; asked again while it runs (an edit), it runs once more after."""

        async def once() -> None:
            if corpus not in self.ws.corpora:
                return
            job = corpus.lint_job()
            if job is None:
                return
            try:
                _, diags = await self.jobs.latest(("lint-run", corpus), job.stop, job.run, lane=("lint", corpus))
            except Exception:  # noqa: BLE001
                self.log_bug("linting")
                return
            if diags is None or corpus not in self.ws.corpora:
                return  # stopped: its corpus was rebuilt
            if corpus.apply_lint(job, diags):  # else stale: an edit since, whose own lint follows
                self.publish(corpus)
            memory.trim()

        await self.jobs.coalesce(("lint", corpus), once)

    # ---- a job's logs: unexplained error lines, drafts ---------------------------------------
    async def read_log(self, uri: str) -> None:
        """Read an open log again if its text or its corpus changed since its last reading
        (in a worker thread, after any pending edit of a rule file, superseded by a newer
        reading of the same log) and publish its RK640/RK641 diagnostics."""
        doc = self.logs.get(uri)
        if doc is None:
            return
        corpus = self.ws.corpus_near(doc.path)
        if corpus.initial_pending:  # its plugins are being probed; their publish reads the log again
            return
        a = corpus.analyze()
        cap, max_bytes = self.settings.unexplained_max, self.settings.log_max_mib << 20
        key = (id(corpus), corpus.edit_generation, id(a), doc.version, cap, max_bytes)
        if doc.key == key:
            return
        if not cap or has_errors(a.diagnostics):  # off, or a corpus that does not load: no reading of its own
            doc.key, doc.reading = key, None
            self.publish_log(doc, [])
            return
        text, version = self.doc_text(uri), doc.version
        job = Cancellable()

        def stop() -> bool:
            FOREGROUND.checkpoint()  # an edit of a rule file is analysed first
            return job.cancelled

        def work():
            return logs_mod.unexplained(a.engine(), doc.path, text, cap, max_bytes, stop)

        try:
            ran, got = await self.jobs.latest(("log", uri), job, work, lane=("logs",))
        except Exception:  # noqa: BLE001
            self.log_bug(f"reading {uri}")
            return
        if not ran or got is None or self.logs.get(uri) is not doc or doc.version != version:
            return
        doc.key, doc.reading = key, got
        self.publish_log(doc, got.diagnostics)

    def publish_log(self, doc: "LogDoc", diags: list) -> None:
        self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(
            uri=doc.uri, version=doc.version,
            diagnostics=[convert.diagnostic(d, lambda p: self.doc_text(doc.uri) if p == doc.path else self.text_of(p),
                                            self.settings.code_docs_url) for d in diags]))

    def log_actions(self, doc: "LogDoc", params: T.CodeActionParams) -> list[T.CodeAction]:
        """"Draft a rule from this line" on each RK640 in the request: one action per TOML
        rule file of the corpus and one creating a new drafts file.  The draft itself is
        made and checked when the action is resolved (`codeAction/resolve`, or the
        `rulekit.draftRule` command for clients without resolve support)."""
        corpus = self.ws.corpus_near(doc.path)
        targets = logs_mod.target_files(corpus.folders, list(corpus.files))
        out = []
        for d in params.context.diagnostics:
            if d.source != "rulekit" or str(d.code) != "RK640" or logs_mod.unexplained_of(d.data) is None:
                continue
            for target in [*targets, None]:
                if target is None:
                    if not corpus.folders or not self.can_create:  # a new file needs the client's CreateFile
                        continue
                    where = self.rel(logs_mod.new_drafts_file(corpus.folders)) + " (new file)"
                else:
                    where = self.rel(target)
                arg = {"uri": doc.uri, "line": d.data, "target": target}
                cmd = None if self.resolve_edit else T.Command(title="Draft a rule from this line", command=DRAFT_RULE,
                                                               arguments=[arg])
                out.append(T.CodeAction(title=f"Draft a rule from this line into {where}", kind=T.CodeActionKind.QuickFix,
                                        diagnostics=[d], data=arg, command=cmd))
        return out

    def rel(self, path: str) -> str:
        for r in self.ws.roots:
            if path.startswith(r.rstrip(os.sep) + os.sep):
                return os.path.relpath(path, r)
        return path

    async def draft_edit(self, arg: Any) -> tuple[T.WorkspaceEdit | None, str | None]:
        """(the edit inserting a checked draft for the line `arg` names, or None; why not)."""
        if not isinstance(arg, dict):
            return None, "no line to draft from"
        u = logs_mod.unexplained_of(arg.get("line"))
        uri = arg.get("uri")
        doc = self.logs.get(uri) if isinstance(uri, str) else None
        if u is None:
            return None, "no line to draft from"
        corpus = self.ws.corpus_near(doc.path if doc else (self.ws.roots[0] if self.ws.roots else os.getcwd()))
        target = arg.get("target")
        if target is not None and (not isinstance(target, str) or target not in corpus.files):
            return None, f"{target!r} is not a rule file of the corpus"
        a = corpus.analyze()
        if has_errors(a.diagnostics):
            return None, "the rule corpus has errors; fix them first (a draft is checked against it)"
        paths = [*corpus.context_folders, *corpus.folders]
        key = (u.text, u.source, u.node, id(a))
        got = self.drafts.get(key)
        if got is None:
            try:
                got = await self.jobs.background(lambda: logs_mod.draft_for(u, a.engine(), paths))
            except Exception:  # noqa: BLE001
                self.log_bug("drafting a rule")
                return None, "drafting failed (see the server log)"
            self.drafts = {k: v for k, v in self.drafts.items() if k[3] == id(a)}  # older corpus states go
            self.drafts[key] = got
        if got.text is None:
            return None, "no draft passed its checks: " + "; ".join(got.problems)
        if target is None:
            path = logs_mod.new_drafts_file(corpus.folders)
            e = logs_mod.append_edit(path, None, got.text)
            uri_t = convert.path_to_uri(path)
            return T.WorkspaceEdit(document_changes=[
                T.CreateFile(uri=uri_t, options=T.CreateFileOptions(ignore_if_exists=True)),
                T.TextDocumentEdit(text_document=T.OptionalVersionedTextDocumentIdentifier(uri=uri_t, version=None),
                                   edits=[convert.text_edit(e, "")])]), None
        current = self.text_of(target) or ""
        e = logs_mod.append_edit(target, current, got.text)
        return T.WorkspaceEdit(changes={convert.path_to_uri(target): [convert.text_edit(e, current)]}), None

    # ---- rule statistics from a result store -----------------------------------------------------
    def configure_stats(self) -> None:
        """The store the settings (else the project file) name, or none."""
        from rulekit.diagnostics import RulekitError
        from rulekit.rules.project import load_project

        path = self.settings.store
        if path and not os.path.isabs(path) and self.ws.roots:
            path = os.path.join(self.ws.roots[0], path)
        if not path and self.ws.roots:
            try:
                project = load_project(self.ws.roots[0])
            except RulekitError:
                project = None  # its problems are published on the project file
            if project is not None and project.store is not None:
                path = str(project.store)
        if not path:
            self.stats = None
        elif self.stats is None or self.stats.path != path or self.stats.window_days != self.settings.stats_window_days:
            self.stats = stats_mod.StoreStats(path, self.settings.stats_window_days)

    async def current_stats(self) -> "stats_mod.StoreStats | None":
        """The store's statistics, read again (off the event loop) when stale; a store that
        cannot be read is shown once (RK642) and gives None."""
        st = self.stats
        if st is None:
            return None
        if not st.fresh():
            await self.jobs.background(st.refresh)
        if st.problem:
            if st.problem not in self.stats_said:
                self.stats_said.add(st.problem)
                self.show(f"rulekit (RK642): no rule statistics: {st.problem}")
            return None
        return st

    def refresh_lenses(self) -> None:
        if self.lens_refresh:
            try:
                self.workspace_code_lens_refresh(None)
            except Exception:  # noqa: BLE001 - a client that refuses the refresh still works
                pass

    def show(self, message: str, kind: T.MessageType = T.MessageType.Warning) -> None:
        self.window_show_message(T.ShowMessageParams(type=kind, message=message))


@dataclass(frozen=True)
class Where:
    """A request's document in rulekit terms: 1-based line and code-point column
    (0, 0 for requests without a position)."""

    corpus: Corpus
    path: str
    uri: str
    text: str
    line: int
    col: int


@dataclass
class LogDoc:
    """A job's log open in the editor and its last reading."""

    uri: str
    path: str
    version: int | None
    key: tuple | None = None  # (corpus, its analysis, version, bounds) of the last reading
    reading: Any = None


LOGS_DELAY_S = 0.5  # a corpus change waits this long (and for any newer one) before its logs are read again
DRAFT_RULE = "rulekit.draftRule"

server = RulekitLanguageServer()


# ---- lifecycle and documents ---------------------------------------------------------------

@server.feature(T.INITIALIZE)
def initialize(ls: RulekitLanguageServer, params: T.InitializeParams) -> None:
    ls.settings, ls.setting_problems = parse_settings(params.initialization_options)
    roots = []
    for f in params.workspace_folders or []:
        p = convert.uri_to_path(f.uri)
        if p:
            roots.append(p)
    if not roots and params.root_uri:
        p = convert.uri_to_path(params.root_uri)
        if p:
            roots.append(p)
    if not roots and params.root_path:
        roots.append(params.root_path)
    ws_caps = params.capabilities.workspace
    ls.lens_refresh = bool(ws_caps and ws_caps.code_lens and ws_caps.code_lens.refresh_support)
    ls.watch_files = bool(ws_caps and ws_caps.did_change_watched_files
                          and ws_caps.did_change_watched_files.dynamic_registration)
    ca = params.capabilities.text_document.code_action if params.capabilities.text_document else None
    ls.resolve_edit = bool(ca and ca.resolve_support and "edit" in (ca.resolve_support.properties or []))
    we = ws_caps.workspace_edit if ws_caps else None
    ls.can_create = bool(we and T.ResourceOperationKind.Create in (we.resource_operations or []))
    ls.ws.configure(roots, ls.settings)
    ls.configure_stats()


@server.feature(T.INITIALIZED)
def initialized(ls: RulekitLanguageServer, params: T.InitializedParams) -> None:
    for p in ls.setting_problems:
        ls.show(p)
    if ls.watch_files:  # rule files changed outside the editor (git checkout, generators)
        watchers = [T.FileSystemWatcher(glob_pattern=g) for g in ("**/*.toml", "**/*.rule", "**/*.py")]
        ls.client_register_capability(T.RegistrationParams(registrations=[T.Registration(
            id="rulekit-watched-files", method=T.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=T.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))
    ls.publish_all()
    memory.trim()  # validating the corpus compiled every pattern once
    for c in ls.ws.corpora:
        ls.schedule_lint(c)


@server.feature(T.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: RulekitLanguageServer, params: T.DidChangeConfigurationParams) -> None:
    settings, problems = parse_settings(params.settings, ls.settings)
    for p in problems:
        ls.show(p)
    if settings != ls.settings:
        ls.settings = settings
        ls.reconfigure(list(ls.ws.roots))


@server.feature(T.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
def did_change_workspace_folders(ls: RulekitLanguageServer, params: T.DidChangeWorkspaceFoldersParams) -> None:
    roots = list(ls.ws.roots)
    for f in params.event.removed:
        p = convert.uri_to_path(f.uri)
        if p in roots:
            roots.remove(p)
    for f in params.event.added:
        p = convert.uri_to_path(f.uri)
        if p and p not in roots:
            roots.append(p)
    ls.reconfigure(roots)


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: RulekitLanguageServer, params: T.DidOpenTextDocumentParams) -> None:
    td = params.text_document
    path = convert.uri_to_path(td.uri)
    if path is None:
        return
    c = ls.ws.open(path, td.text, td.version)
    if c is not None:
        ls.publish(c, force=path)
        ls.after_edit(c, path)
    elif logs_mod.is_job_log(path, td.language_id):
        ls.logs[td.uri] = LogDoc(td.uri, path, td.version)
        ls.spawn(ls.read_log(td.uri))


@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: RulekitLanguageServer, params: T.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    FOREGROUND.busy()  # background tests and lint wait until this edit is published
    ls.jobs.call_later(("change", uri), ls.settings.debounce_ms / 1000, lambda: ls._apply_change(uri))


@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: RulekitLanguageServer, params: T.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    path = convert.uri_to_path(uri)
    if path is None:
        return
    ls.flush(uri)
    c = ls.ws.save(path, ls.doc_text(uri))
    if c is not None:
        ls.publish(c)
        ls.schedule_lint(c)  # a lint running now describes the text before the save: it is dropped


@server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: RulekitLanguageServer, params: T.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    path = convert.uri_to_path(uri)
    ls.jobs.cancel(("change", uri))
    if not ls.jobs.pending("change"):
        FOREGROUND.idle()
    doc = ls.logs.pop(uri, None)
    if doc is not None:  # its diagnostics go with it
        ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        return
    if path is not None:
        ls.ws.close(path)
        c = ls.ws.corpus_for(path, create=False)
        if c is not None:
            ls.publish(c)
            ls.schedule_lint(c)


@server.feature(T.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: RulekitLanguageServer, params: T.DidChangeWatchedFilesParams) -> None:
    touched = []
    for ev in params.changes:
        path = convert.uri_to_path(ev.uri)
        if path is None:
            continue
        if os.path.basename(path) in ("rulekit.toml", "pyproject.toml"):  # the project file: which folders
            ls.reconfigure(ls.ws.roots)
            return
        c = ls.ws.disk_changed(path, deleted=ev.type == T.FileChangeType.Deleted)
        if c is not None and c not in touched:
            touched.append(c)
    for c in touched:
        ls.publish(c)
        ls.schedule_lint(c)


# ---- language features -----------------------------------------------------------------------

@server.feature(T.TEXT_DOCUMENT_HOVER)
async def on_hover(ls: RulekitLanguageServer, params: T.HoverParams) -> T.Hover | None:
    w = ls.where(params)
    if w is None:
        return None
    h = hover.hover(w.corpus, w.path, w.line, w.col)
    hit = w.corpus.occurrence_at(w.path, w.line, w.col) if h is not None and ls.stats is not None else None
    if hit is not None and hit[0] == hover.RULE:
        st = await ls.current_stats()
        extra = stats_mod.markdown(st, hit[1].name) if st is not None else \
            f"**in production**: unavailable — {ls.stats.problem}" if ls.stats and ls.stats.problem else None
        if extra:
            h = dataclasses.replace(h, markdown=h.markdown + "\n\n" + extra)
    return convert.hover(h, w.text)


@server.feature(T.TEXT_DOCUMENT_DEFINITION)
def on_definition(ls: RulekitLanguageServer, params: T.DefinitionParams) -> list[T.Location] | None:
    w = ls.where(params)
    if w is None:
        return None
    return [convert.location(s, ls.text_of) for s in navigation.definition(w.corpus, w.path, w.line, w.col)] or None


@server.feature(T.TEXT_DOCUMENT_REFERENCES)
def on_references(ls: RulekitLanguageServer, params: T.ReferenceParams) -> list[T.Location] | None:
    w = ls.where(params)
    if w is None:
        return None
    spans = navigation.references(w.corpus, w.path, w.line, w.col, params.context.include_declaration)
    return [convert.location(s, ls.text_of) for s in spans] or None


@server.feature(T.TEXT_DOCUMENT_PREPARE_RENAME)
def on_prepare_rename(ls: RulekitLanguageServer, params: T.PrepareRenameParams):
    w = ls.where(params)
    got = navigation.prepare_rename(w.corpus, w.path, w.line, w.col) if w else None
    if got is None:
        return None
    span, placeholder = got
    return T.PrepareRenamePlaceholder(range=convert.to_range(span, w.text), placeholder=placeholder)


@server.feature(T.TEXT_DOCUMENT_RENAME, T.RenameOptions(prepare_provider=True))
def on_rename(ls: RulekitLanguageServer, params: T.RenameParams) -> T.WorkspaceEdit | None:
    w = ls.where(params)
    if w is None:
        return None
    edits = navigation.rename(w.corpus, w.path, w.line, w.col, params.new_name)
    if isinstance(edits, str):
        ls.show(f"rename: {edits}")
        return None
    return convert.workspace_edit(edits, ls.text_of)


@server.feature(T.TEXT_DOCUMENT_COMPLETION,
                T.CompletionOptions(trigger_characters=['"', "'", "[", ".", " ", ","]))
def on_completion(ls: RulekitLanguageServer, params: T.CompletionParams) -> T.CompletionList | None:
    w = ls.where(params)
    if w is None:
        return None
    return convert.completion(completion_mod.complete(w.corpus, w.path, w.text, w.line, w.col), w.text, w.line,
                              completion_mod.word_range(w.text, w.line, w.col))


@server.feature(T.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def on_document_symbol(ls: RulekitLanguageServer, params: T.DocumentSymbolParams) -> list[T.DocumentSymbol] | None:
    w = ls.where(params)
    if w is None:
        return None
    return [convert.document_symbol(s, w.text) for s in symbols.document_symbols(w.corpus, w.path)]


@server.feature(T.TEXT_DOCUMENT_FOLDING_RANGE)
def on_folding_range(ls: RulekitLanguageServer, params: T.FoldingRangeParams) -> list[T.FoldingRange] | None:
    from rulekit_lsp.features.folding import folding_ranges

    path = convert.uri_to_path(params.text_document.uri)
    if path is None:
        return None
    text = ls.doc_text(params.text_document.uri)
    kinds = {"region": T.FoldingRangeKind.Region, "comment": T.FoldingRangeKind.Comment}
    return [T.FoldingRange(start_line=a - 1, end_line=b - 1, kind=kinds[k]) for a, b, k in folding_ranges(path, text)]


@server.feature(T.WORKSPACE_SYMBOL)
def on_workspace_symbol(ls: RulekitLanguageServer, params: T.WorkspaceSymbolParams) -> list[T.WorkspaceSymbol]:
    return [convert.workspace_symbol(s, ls.text_of) for s in symbols.workspace_symbols(ls.ws.corpora, params.query)]


@server.feature(T.TEXT_DOCUMENT_FORMATTING)
def on_formatting(ls: RulekitLanguageServer, params: T.DocumentFormattingParams) -> list[T.TextEdit] | None:
    path = convert.uri_to_path(params.text_document.uri)
    if path is None:
        return None
    text = ls.doc_text(params.text_document.uri)
    return [convert.text_edit(e, text) for e in editing.format_document(path, text)]


@server.feature(T.TEXT_DOCUMENT_CODE_ACTION,
                T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix, T.CodeActionKind.RefactorRewrite],
                                    resolve_provider=True))
def on_code_action(ls: RulekitLanguageServer, params: T.CodeActionParams) -> list[T.CodeAction] | None:
    doc = ls.logs.get(params.text_document.uri)
    if doc is not None:
        return ls.log_actions(doc, params) or None
    w = ls.where(params)
    if w is None:
        return None
    span = convert.from_range(w.path, w.text, params.range)
    only = {(str(d.code), d.message) for d in params.context.diagnostics if d.source == "rulekit"}
    return [convert.code_action(a, ls.text_of, ls.settings.code_docs_url)
            for a in editing.code_actions(w.corpus, w.path, span, only or None)]


@server.feature(T.CODE_ACTION_RESOLVE)
async def on_code_action_resolve(ls: RulekitLanguageServer, action: T.CodeAction) -> T.CodeAction:
    """The draft of "Draft a rule from this line", made and checked now: the action's edit
    (and no command), or, when no draft passed, no edit and a message saying why."""
    if not (isinstance(action.data, dict) and "line" in action.data):
        return action
    edit, why = await ls.draft_edit(action.data)
    if edit is None:
        ls.show(f"rulekit: {why}")
    return T.CodeAction(title=action.title, kind=action.kind, diagnostics=action.diagnostics, edit=edit,
                        data=action.data)


@server.feature(T.TEXT_DOCUMENT_CODE_LENS)
async def on_code_lens(ls: RulekitLanguageServer, params: T.CodeLensParams) -> list[T.CodeLens] | None:
    w = ls.where(params)
    if w is None:
        return None
    out = [convert.code_lens(x, w.text) for x in lens.code_lenses(w.corpus, w.path, w.uri)]
    if ls.stats is not None:
        st = await ls.current_stats()
        st_file = w.corpus.files.get(w.path)
        if st is not None and st_file is not None:
            out += [convert.code_lens(x, w.text) for x in stats_mod.lenses(st, list(st_file.ruleset.rules), w.path)]
    return out


@server.feature(T.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL,
                T.SemanticTokensLegend(token_types=list(TOKEN_TYPES), token_modifiers=list(TOKEN_MODIFIERS)))
def on_semantic_tokens(ls: RulekitLanguageServer, params: T.SemanticTokensParams) -> T.SemanticTokens:
    uri = params.text_document.uri
    path = convert.uri_to_path(uri)
    text = ls.doc_text(uri)
    if path is None or file_kind(path) != "rule":
        return T.SemanticTokens(data=[])
    w = ls.where(params)
    module = w.corpus.files[path].module if w else None
    return convert.semantic_tokens(tokens.dsl_tokens(text, module), text)


@server.feature(T.TEXT_DOCUMENT_INLAY_HINT)
def on_inlay_hint(ls: RulekitLanguageServer, params: T.InlayHintParams) -> list[T.InlayHint] | None:
    uri = params.text_document.uri
    path = convert.uri_to_path(uri)
    if path is None or not inlay.is_sample_log(path, ls.settings.example_folders):
        return None
    text = ls.doc_text(uri)
    corpus = ls.ws.corpus_near(path)
    first, _ = convert.from_position(text, params.range.start)
    last, _ = convert.from_position(text, params.range.end)
    return [convert.inlay_hint(h, text) for h in inlay.inlay_hints(corpus, path, text, first, last)]


# ---- commands ------------------------------------------------------------------------------

def _arg(args: tuple, key: str) -> Any:
    for a in args:
        if isinstance(a, dict) and key in a:
            return a[key]
    return None


@server.command(lens.RUN_TESTS)
async def cmd_run_tests(ls: RulekitLanguageServer, *args: Any) -> dict[str, Any]:
    """Run the inline tests of one rule (`rule`) or of one file (`uri`), job tests included."""
    uri = _arg(args, "uri")
    path = convert.uri_to_path(uri) if isinstance(uri, str) else None
    c = ls.ws.corpus_for(path, create=False) if path else None
    if c is None:
        return {"passed": 0, "failed": 0, "total": 0, "failures": [], "error": "not a rule file of the workspace"}
    if isinstance(uri, str):
        ls.flush(uri)
    rule = _arg(args, "rule")
    job = c.test_job(paths=[path], rule=rule if isinstance(rule, str) else None, jobs=True)
    return await ls.run_tests(c, job)


@server.command(lens.RUN_ALL_TESTS)
async def cmd_run_all_tests(ls: RulekitLanguageServer, *args: Any) -> dict[str, Any]:
    """Run every inline and job-level test of every corpus in the workspace."""
    total = {"passed": 0, "failed": 0, "total": 0, "failures": []}
    for c in list(ls.ws.corpora):
        got = await ls.run_tests(c, c.test_job(paths=None, jobs=True))
        for k in ("passed", "failed", "total"):
            total[k] += got[k]
        total["failures"] += got["failures"]
    ls.show(f"rulekit: {total['passed']}/{total['total']} tests passed"
            + (f", {total['failed']} failed" if total["failed"] else ""),
            T.MessageType.Info if not total["failed"] else T.MessageType.Warning)
    return total


@server.command(DRAFT_RULE)
async def cmd_draft_rule(ls: RulekitLanguageServer, *args: Any) -> dict[str, Any]:
    """"Draft a rule from this line" for clients without `codeAction/resolve`: makes and
    checks the draft, then asks the client to apply the edit (`workspace/applyEdit`)."""
    arg = next((a for a in args if isinstance(a, dict) and "line" in a), None)
    edit, why = await ls.draft_edit(arg)
    if edit is None:
        ls.show(f"rulekit: {why}")
        return {"applied": False, "error": why}
    got = await ls.workspace_apply_edit_async(T.ApplyWorkspaceEditParams(edit=edit, label="Draft a rule"))
    return {"applied": bool(got and got.applied)}


def main(argv: list[str] | None = None) -> None:
    """Start on stdio (default) or TCP; logs go to stderr, never stdout."""
    logging.basicConfig(level=logging.WARNING)
    start_stdio()


def start_stdio() -> None:
    """Serve on stdio with the protocol on a private copy of fd 1: fd 1 itself (and
    sys.stdout) then point at stderr, so nothing else that writes to stdout (a
    plugin, a C library, a child process) can corrupt the protocol stream."""
    import os
    import sys

    proto = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    server.start_io(sys.stdin.buffer, proto)


if __name__ == "__main__":
    main()
