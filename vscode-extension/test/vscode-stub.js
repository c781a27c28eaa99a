// A small stand-in for the `vscode` module, enough for the real
// vscode-languageclient 11 to start a server, sync documents and hand results
// back.  It records what the extension and the client register (commands,
// providers, diagnostics, messages, webviews) so tests can assert on it.
// Not a test file itself (node --test runs test/*.test.js only).
"use strict";
const fs = require("fs");
const path = require("path");
const nodeUrl = require("url");

const recorded = {
  commands: new Map(),          // id -> handler
  providers: {},                // registerXProvider name -> [[selector, provider], ...]
  diagnostics: new Map(),       // uri string -> Diagnostic[]
  messages: [],                 // {level, message, items}
  outputs: new Map(),           // channel name -> text
  webviews: [],                 // {viewType, title, webview: {html}}
  watchers: [],                 // file system watchers ({glob, created, changed, deleted} emitters)
  unknown: new Set(),           // vscode members the stub does not model (for debugging)
};
const configValues = {};        // "rulekit.server.pythonPath" -> value
const listeners = { didChangeConfiguration: [] };

class Disposable {
  constructor(fn) { this._fn = fn; }
  static from(...ds) { return new Disposable(() => ds.forEach((d) => d && d.dispose && d.dispose())); }
  dispose() { if (this._fn) { this._fn(); this._fn = undefined; } }
}

class EventEmitter {
  constructor() {
    this._ls = [];
    this.event = (l, thisArg, disposables) => {
      const f = thisArg ? l.bind(thisArg) : l;
      this._ls.push(f);
      const d = new Disposable(() => { this._ls = this._ls.filter((x) => x !== f); });
      if (Array.isArray(disposables)) disposables.push(d);
      return d;
    };
  }
  fire(e) { for (const l of [...this._ls]) l(e); }
  dispose() { this._ls = []; }
}
const noEvent = () => new Disposable();

class Uri {
  constructor(scheme, authority, p, query, fragment) {
    Object.assign(this, { scheme, authority: authority || "", path: p || "", query: query || "", fragment: fragment || "" });
  }
  static file(p) { return new Uri("file", "", path.resolve(p).split(path.sep).join("/")); }
  static parse(s) {
    const u = new URL(s);
    if (u.protocol === "file:") return Uri.file(nodeUrl.fileURLToPath(u));
    return new Uri(u.protocol.replace(/:$/, ""), u.host, decodeURIComponent(u.pathname), u.search.replace(/^\?/, ""), u.hash.replace(/^#/, ""));
  }
  static joinPath(base, ...parts) { return base.with({ path: path.posix.join(base.path, ...parts) }); }
  get fsPath() { return this.scheme === "file" ? nodeUrl.fileURLToPath(this.toString()) : this.path; }
  with(change) {
    return new Uri(change.scheme ?? this.scheme, change.authority ?? this.authority, change.path ?? this.path,
      change.query ?? this.query, change.fragment ?? this.fragment);
  }
  toString() {
    if (this.scheme === "file") return nodeUrl.pathToFileURL(this.path).toString();
    return `${this.scheme}://${this.authority}${this.path}${this.query ? "?" + this.query : ""}`;
  }
  toJSON() { return { scheme: this.scheme, path: this.path, fsPath: this.fsPath, external: this.toString() }; }
}

class Position {
  constructor(line, character) { this.line = line; this.character = character; }
  isBefore(o) { return this.line < o.line || (this.line === o.line && this.character < o.character); }
  isEqual(o) { return this.line === o.line && this.character === o.character; }
  translate(dl = 0, dc = 0) { return new Position(this.line + dl, this.character + dc); }
}
class Range {
  constructor(a, b, c, d) {
    if (typeof a === "number") { this.start = new Position(a, b); this.end = new Position(c, d); }
    else { this.start = a; this.end = b; }
  }
  get isEmpty() { return this.start.isEqual(this.end); }
  contains(p) {
    const q = p.start ?? p;
    return !q.isBefore(this.start) && (q.isBefore(this.end) || q.isEqual(this.end));
  }
}
class Selection extends Range {}
class Location { constructor(uri, rangeOrPosition) { this.uri = uri; this.range = rangeOrPosition; } }
class MarkdownString {
  constructor(value = "", supportThemeIcons = false) { this.value = value; this.supportThemeIcons = supportThemeIcons; this.isTrusted = false; }
  appendMarkdown(s) { this.value += s; return this; }
  appendText(s) { this.value += s; return this; }
  appendCodeblock(s, lang = "") { this.value += "\n```" + lang + "\n" + s + "\n```\n"; return this; }
}
class Hover { constructor(contents, range) { this.contents = Array.isArray(contents) ? contents : [contents]; this.range = range; } }
class CodeLens {
  constructor(range, command) { this.range = range; this.command = command; }
  get isResolved() { return !!this.command; }
}
const DiagnosticSeverity = { Error: 0, Warning: 1, Information: 2, Hint: 3 };
const DiagnosticTag = { Unnecessary: 1, Deprecated: 2 };
class Diagnostic {
  constructor(range, message, severity = DiagnosticSeverity.Error) { this.range = range; this.message = message; this.severity = severity; }
}
class DiagnosticRelatedInformation { constructor(location, message) { this.location = location; this.message = message; } }
class CancellationTokenSource {
  constructor() {
    const em = new EventEmitter();
    this._em = em;
    this.token = { isCancellationRequested: false, onCancellationRequested: em.event };
  }
  cancel() { this.token.isCancellationRequested = true; this._em.fire(); }
  dispose() {}
}
class TextEdit {
  constructor(range, newText) { this.range = range; this.newText = newText; }
  static replace(r, t) { return new TextEdit(r, t); }
  static insert(p, t) { return new TextEdit(new Range(p, p), t); }
  static delete(r) { return new TextEdit(r, ""); }
}
class WorkspaceEdit { constructor() { this._edits = []; } replace(uri, range, text) { this._edits.push([uri, range, text]); } set(uri, edits) { this._edits.push([uri, edits]); } entries() { return this._edits; } }
class RelativePattern { constructor(base, pattern) { this.baseUri = typeof base === "string" ? Uri.file(base) : base.uri ?? base; this.base = this.baseUri.fsPath; this.pattern = pattern; } }
class ThemeIcon { constructor(id) { this.id = id; } }
class CodeAction { constructor(title, kind) { this.title = title; this.kind = kind; } }
class CodeActionKind {
  constructor(value) { this.value = value; }
  append(p) { return new CodeActionKind(this.value ? `${this.value}.${p}` : p); }
  contains(o) { return o.value === this.value || o.value.startsWith(this.value + "."); }
  intersects(o) { return this.contains(o) || o.contains(this); }
}
for (const k of ["Empty", "QuickFix", "Refactor", "RefactorExtract", "RefactorInline", "RefactorRewrite", "Source",
  "SourceOrganizeImports", "SourceFixAll", "Notebook"]) {
  CodeActionKind[k] = new CodeActionKind(k === "Empty" ? "" : k.replace(/([a-z])([A-Z])/g, "$1.$2").toLowerCase());
}
class SemanticTokensLegend { constructor(tokenTypes, tokenModifiers = []) { this.tokenTypes = tokenTypes; this.tokenModifiers = tokenModifiers; } }
class SemanticTokens { constructor(data, resultId) { this.data = data; this.resultId = resultId; } }
class InlayHint { constructor(position, label, kind) { this.position = position; this.label = label; this.kind = kind; } }
class SymbolInformation { constructor(name, kind, containerName, location) { Object.assign(this, { name, kind, containerName, location }); } }
class DocumentSymbol { constructor(name, detail, kind, range, selectionRange) { Object.assign(this, { name, detail, kind, range, selectionRange, children: [] }); } }
class CompletionItem { constructor(label, kind) { this.label = label; this.kind = kind; } }
class CompletionList { constructor(items = [], isIncomplete = false) { this.items = items; this.isIncomplete = isIncomplete; } }
class SnippetString { constructor(value = "") { this.value = value; } }

class CancellationError extends Error { constructor() { super("Canceled"); this.name = "Canceled"; } }
class DocumentLink { constructor(range, target) { this.range = range; this.target = target; } }
class FoldingRange { constructor(start, end, kind) { Object.assign(this, { start, end, kind }); } }
/** Result types nobody asserts on: keep the constructor arguments. */
function plainClass(name) {
  const C = class { constructor(...args) { this.args = args; } };
  Object.defineProperty(C, "name", { value: name });
  return C;
}
const PLAIN = Object.fromEntries(["CallHierarchyItem", "TypeHierarchyItem", "CallHierarchyIncomingCall",
  "CallHierarchyOutgoingCall", "Color", "ColorInformation", "ColorPresentation", "DocumentHighlight",
  "InlayHintLabelPart", "InlineCompletionItem", "InlineCompletionList", "InlineValueEvaluatableExpression",
  "InlineValueText", "InlineValueVariableLookup", "LinkedEditingRanges", "ParameterInformation", "SelectionRange",
  "SemanticTokensEdit", "SemanticTokensEdits", "SignatureHelp", "SignatureInformation", "SnippetTextEdit",
].map((n) => [n, plainClass(n)]));

/** A fake TextDocument for `text` at `fsPath`. */
function makeTextDocument(fsPath, languageId, text, version = 1) {
  const lines = text.split(/\r?\n/);
  const uri = Uri.file(fsPath);
  const offsetAt = (pos) => lines.slice(0, pos.line).reduce((n, l) => n + l.length + 1, 0) + pos.character;
  return {
    uri, fileName: fsPath, languageId, version, isDirty: false, isClosed: false, isUntitled: false, eol: 1,
    lineCount: lines.length,
    getText: (range) => (range ? text.slice(offsetAt(range.start), offsetAt(range.end)) : text),
    lineAt: (l) => {
      const n = typeof l === "number" ? l : l.line;
      return { lineNumber: n, text: lines[n], range: new Range(n, 0, n, lines[n].length), isEmptyOrWhitespace: !lines[n].trim() };
    },
    offsetAt,
    positionAt: (off) => {
      let line = 0;
      while (line < lines.length - 1 && off > lines[line].length) { off -= lines[line].length + 1; line++; }
      return new Position(line, off);
    },
    getWordRangeAtPosition: (pos, re = /[A-Za-z0-9_\-.]+/g) => {
      const t = lines[pos.line];
      const g = new RegExp(re.source, "g");
      let m;
      while ((m = g.exec(t))) if (m.index <= pos.character && pos.character <= m.index + m[0].length) return new Range(pos.line, m.index, pos.line, m.index + m[0].length);
      return undefined;
    },
    save: async () => true,
  };
}

/** `**`, `*`, `?`, `{a,b}`, `[...]` glob to a RegExp over `/`-separated paths. */
function globToRegExp(glob) {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*" && glob[i + 1] === "*") { re += glob[i + 2] === "/" ? "(?:.*/)?" : ".*"; i += glob[i + 2] === "/" ? 2 : 1; }
    else if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else if (c === "{") { const j = glob.indexOf("}", i); re += "(?:" + glob.slice(i + 1, j).split(",").map((s) => s.replace(/[.+^$()|\\]/g, "\\$&")).join("|") + ")"; i = j; }
    else if (c === "[") { const j = glob.indexOf("]", i); re += "[" + glob.slice(i + 1, j) + "]"; i = j; }
    else re += c.replace(/[.+^$()|\\]/g, "\\$&");
  }
  return new RegExp("^" + re + "$");
}

function matchFilter(filter, doc) {
  if (typeof filter === "string") return filter === doc.languageId || filter === "*";
  if (filter.language && filter.language !== "*" && filter.language !== doc.languageId) return false;
  if (filter.scheme && filter.scheme !== "*" && filter.scheme !== doc.uri.scheme) return false;
  if (filter.pattern) {
    const p = doc.uri.fsPath.split(path.sep).join("/");
    if (typeof filter.pattern === "string") {
      const g = filter.pattern.startsWith("/") || filter.pattern.startsWith("**") ? filter.pattern : "**/" + filter.pattern;
      if (!globToRegExp(g).test(p)) return false;
    } else {
      const base = filter.pattern.base.split(path.sep).join("/");
      if (!p.startsWith(base + "/") || !globToRegExp(filter.pattern.pattern).test(p.slice(base.length + 1))) return false;
    }
  }
  return true;
}

function makeOutputChannel(name) {
  recorded.outputs.set(name, "");
  const add = (s) => recorded.outputs.set(name, recorded.outputs.get(name) + s);
  const line = (s) => add(String(s) + "\n");
  return {
    name, logLevel: 2, onDidChangeLogLevel: noEvent,
    append: add, appendLine: line, replace: (s) => recorded.outputs.set(name, s), clear: () => recorded.outputs.set(name, ""),
    show() {}, hide() {}, dispose() {},
    trace: line, debug: line, info: line, warn: line, error: (e) => line(e instanceof Error ? e.message : e),
  };
}

function makeDiagnosticCollection(name) {
  const own = new Map();
  const sync = (uri) => recorded.diagnostics.set(uri.toString(), own.get(uri.toString()) ?? []);
  return {
    name,
    set(uriOrEntries, diags) {
      if (Array.isArray(uriOrEntries)) for (const [u, d] of uriOrEntries) { own.set(u.toString(), d ? [...d] : []); sync(u); }
      else { own.set(uriOrEntries.toString(), diags ? [...diags] : []); sync(uriOrEntries); }
    },
    delete(uri) { own.delete(uri.toString()); sync(uri); },
    clear() { for (const k of own.keys()) recorded.diagnostics.set(k, []); own.clear(); },
    forEach(cb) { for (const [k, v] of own) cb(Uri.parse(k), v, this); },
    get(uri) { return own.get(uri.toString()); },
    has(uri) { return own.has(uri.toString()); },
    dispose() { this.clear(); },
    [Symbol.iterator]: function* () { for (const [k, v] of own) yield [Uri.parse(k), v]; },
  };
}

function walk(dir, out = []) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

const workspace = {
  workspaceFolders: [],
  textDocuments: [],
  notebookDocuments: [],
  name: "test",
  getConfiguration(section) {
    return {
      get: (key, def) => {
        const full = section ? `${section}.${key}` : key;
        return Object.prototype.hasOwnProperty.call(configValues, full) ? configValues[full] : def;
      },
      has: (key) => Object.prototype.hasOwnProperty.call(configValues, section ? `${section}.${key}` : key),
      inspect: () => undefined,
      update: async () => {},
    };
  },
  async findFiles(include, exclude, max) {
    const inc = globToRegExp(typeof include === "string" ? include : include.pattern);
    const exc = exclude ? globToRegExp(typeof exclude === "string" ? exclude : exclude.pattern) : undefined;
    const out = [];
    for (const f of workspace.workspaceFolders) {
      for (const p of walk(f.uri.fsPath)) {
        const rel = path.relative(f.uri.fsPath, p).split(path.sep).join("/");
        if (inc.test(rel) && !(exc && exc.test(rel))) out.push(Uri.file(p));
      }
    }
    return out.slice(0, max ?? out.length);
  },
  getWorkspaceFolder(uri) { return workspace.workspaceFolders.find((f) => uri.fsPath.startsWith(f.uri.fsPath)); },
  asRelativePath(p) { return typeof p === "string" ? p : p.fsPath; },
  createFileSystemWatcher: (glob) => {
    const created = new EventEmitter();
    const changed = new EventEmitter();
    const deleted = new EventEmitter();
    const w = { glob, created, changed, deleted, onDidCreate: created.event, onDidChange: changed.event, onDidDelete: deleted.event,
      dispose() { recorded.watchers.splice(recorded.watchers.indexOf(w), 1); } };
    recorded.watchers.push(w);
    return w;
  },
  onDidChangeConfiguration: (l) => { listeners.didChangeConfiguration.push(l); return new Disposable(); },
  saveAll: async () => true,
  applyEdit: async () => true,
  openTextDocument: async (u) => workspace.textDocuments.find((d) => d.uri.toString() === u.toString()),
  fs: { stat: async (u) => fs.statSync(u.fsPath), readFile: async (u) => fs.readFileSync(u.fsPath) },
};

const window = {
  activeTextEditor: undefined,
  visibleTextEditors: [],
  tabGroups: { all: [], activeTabGroup: { tabs: [] }, onDidChangeTabs: noEvent, onDidChangeTabGroups: noEvent },
  createOutputChannel: (name) => makeOutputChannel(name),
  showErrorMessage: async (message, ...items) => { recorded.messages.push({ level: "error", message, items }); return undefined; },
  showWarningMessage: async (message, ...items) => { recorded.messages.push({ level: "warning", message, items }); return undefined; },
  showInformationMessage: async (message, ...items) => { recorded.messages.push({ level: "info", message, items }); return undefined; },
  withProgress: async (_opts, task) => task({ report() {} }, new CancellationTokenSource().token),
  createWebviewPanel: (viewType, title) => {
    const panel = { viewType, title, webview: { html: "", cspSource: "stub:" }, reveal() {}, dispose() {}, onDidDispose: noEvent };
    recorded.webviews.push(panel);
    return panel;
  },
  showOpenDialog: async () => undefined,
  showTextDocument: async () => undefined,
  createStatusBarItem: () => ({ show() {}, hide() {}, dispose() {} }),
};

function recorder(name) {
  return (selector, provider, ...rest) => {
    (recorded.providers[name] ??= []).push([selector, provider, ...rest]);
    return new Disposable();
  };
}

const languages = new Proxy({
  match(selector, doc) {
    const sels = Array.isArray(selector) ? selector : [selector];
    return sels.some((s) => matchFilter(s, doc)) ? 10 : 0;
  },
  createDiagnosticCollection: (name) => makeDiagnosticCollection(name),
  getLanguages: async () => ["rulekit", "toml", "python"],
  setLanguageConfiguration: () => new Disposable(),
}, {
  get(target, prop) {
    if (prop in target) return target[prop];
    if (typeof prop === "string" && prop.startsWith("register")) return recorder(prop);
    if (typeof prop === "string" && prop.startsWith("on")) return noEvent;
    recorded.unknown.add(`languages.${String(prop)}`);
    return undefined;
  },
});

const commands = {
  registerCommand(id, fn) {
    if (recorded.commands.has(id)) throw new Error(`command '${id}' already exists`);
    recorded.commands.set(id, fn);
    return new Disposable(() => recorded.commands.delete(id));
  },
  executeCommand: async (id, ...args) => {
    const fn = recorded.commands.get(id);
    if (fn) return fn(...args);
    recorded.messages.push({ level: "command", message: id, items: args });
    return undefined;
  },
  getCommands: async () => [...recorded.commands.keys()],
};

/** Events and helpers nobody asserts on: any `onX` is an event, anything else is recorded as unknown. */
function lenient(base, prefix) {
  return new Proxy(base, {
    get(target, prop) {
      if (prop in target) return target[prop];
      if (typeof prop === "string" && prop.startsWith("on")) return noEvent;
      if (typeof prop === "string" && prop.startsWith("register")) return recorder(`${prefix}.${prop}`);
      recorded.unknown.add(`${prefix}.${String(prop)}`);
      return undefined;
    },
  });
}

const enums = {
  ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
  ViewColumn: { Active: -1, Beside: -2, One: 1, Two: 2, Three: 3 },
  ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
  EndOfLine: { LF: 1, CRLF: 2 },
  TextDocumentSaveReason: { Manual: 1, AfterDelay: 2, FocusOut: 3 },
  CompletionItemKind: new Proxy({}, { get: (_t, p) => (typeof p === "string" ? p.length : undefined) }),
  SymbolKind: new Proxy({}, { get: (_t, p) => (typeof p === "string" ? p.length : undefined) }),
  CompletionTriggerKind: { Invoke: 0, TriggerCharacter: 1, TriggerForIncompleteCompletions: 2 },
  SignatureHelpTriggerKind: { Invoke: 1, TriggerCharacter: 2, ContentChange: 3 },
  InlayHintKind: { Type: 1, Parameter: 2 },
  FileType: { Unknown: 0, File: 1, Directory: 2, SymbolicLink: 64 },
  UIKind: { Desktop: 1, Web: 2 },
  LogLevel: { Off: 0, Trace: 1, Debug: 2, Info: 3, Warning: 4, Error: 5 },
  DocumentHighlightKind: { Text: 0, Read: 1, Write: 2 },
  FoldingRangeKind: { Comment: 1, Imports: 2, Region: 3 },
  CodeActionTriggerKind: { Invoke: 1, Automatic: 2 },
  TextEditorRevealType: { Default: 0, InCenter: 1, InCenterIfOutsideViewport: 2, AtTop: 3 },
  NotebookCellKind: { Markup: 1, Code: 2 },
};

const vscode = {
  version: "1.91.0",
  Disposable, EventEmitter, Uri, Position, Range, Selection, Location, MarkdownString, Hover, CodeLens,
  Diagnostic, DiagnosticSeverity, DiagnosticTag, DiagnosticRelatedInformation, CancellationTokenSource,
  TextEdit, WorkspaceEdit, RelativePattern, ThemeIcon, CodeAction, CodeActionKind, SemanticTokensLegend,
  SemanticTokens, InlayHint, SymbolInformation, DocumentSymbol, CompletionItem, CompletionList, SnippetString,
  CancellationError, DocumentLink, FoldingRange, ...PLAIN,
  ...enums,
  workspace: lenient(workspace, "workspace"),
  window: lenient(window, "window"),
  languages,
  commands,
  env: { language: "en", appName: "stub", appRoot: "/", machineId: "stub", sessionId: "stub", uiKind: 1, openExternal: async () => true, clipboard: { writeText: async () => {} } },
  extensions: { getExtension: () => undefined, all: [], onDidChange: noEvent },
  l10n: { t: (m, ...args) => (typeof m === "string" ? m.replace(/\{(\d+)\}/g, (_x, i) => String(args[Number(i)])) : m.message) },
  tests: lenient({}, "tests"),
  notebooks: lenient({}, "notebooks"),
};

module.exports = {
  vscode: new Proxy(vscode, {
    get(target, prop) {
      if (prop in target) return target[prop];
      recorded.unknown.add(String(prop));
      return undefined;
    },
  }),
  recorded, configValues, makeTextDocument, globToRegExp, listeners,
};
