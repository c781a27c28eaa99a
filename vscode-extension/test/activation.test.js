// Activation test: the bundled extension (dist/extension.js) under the `vscode`
// stub.  The real vscode-languageclient spawns the real `rulekit lsp` (Python)
// for test/fixtures/workspace, and we check that diagnostics, hover and code
// lenses arrive, that the commands run through the server, and that a server
// that cannot start produces a message with the fix.
//
// Python: $RULEKIT_PYTHON, else the extension's own discovery (a .venv in the
// workspace folder or a parent: the repository's .venv).  It never skips: a
// Python without the server module (or an unbuilt bundle) fails the suite with
// the fix, since both are part of this repository.
"use strict";
const { describe, it, before, after } = require("node:test");
const assert = require("node:assert/strict");
const { execFileSync } = require("child_process");
const fs = require("fs");
const Module = require("module");
const path = require("path");
const stub = require("./vscode-stub");

const ROOT = path.resolve(__dirname, "..");
const BUNDLE = path.join(ROOT, "dist", "extension.js");
const WS = path.join(__dirname, "fixtures", "workspace");
const RULE_FILE = path.join(WS, "rules", "gpu.rule");
const TOML_FILE = path.join(WS, "rules", "nccl.toml");
const REPO = path.resolve(ROOT, "..");
const EXAMPLE_JOB = path.join(REPO, "examples", "xid149-nvlink");
// generous: on a loaded machine the server's start (Python, the corpus, plugin probes) takes long
const TIMEOUT_MS = Number(process.env.RULEKIT_TEST_TIMEOUT_MS || 90000);

const origLoad = Module._load;
Module._load = function (request, parent, isMain) {
  return request === "vscode" ? stub.vscode : origLoad.call(this, request, parent, isMain);
};

function python() {
  if (process.env.RULEKIT_PYTHON) return process.env.RULEKIT_PYTHON;
  for (let dir = WS; ; dir = path.dirname(dir)) {
    const p = path.join(dir, ".venv", "bin", "python");
    if (fs.existsSync(p)) return p;
    if (path.dirname(dir) === dir) return undefined; // never a python3 from PATH: it may lack rulekit
  }
}

/** Why the server cannot be tested here, or undefined when it can. */
function serverMissing() {
  const py = python();
  if (!py) return "no Python with rulekit: set RULEKIT_PYTHON, or create the repository's .venv (make test does)";
  try {
    execFileSync(py, ["-c", "import rulekit.cli.lsp, rulekit_lsp.server"], { stdio: "pipe" });
    return undefined;
  } catch (e) {
    const err = String(e.stderr || e.message);
    if (/No module named/.test(err)) return `the language server module is missing in ${py} (${err.trim().split("\n").pop()}); this test waits for rulekit/cli/lsp.py + lsp/ (rulekit_lsp)`;
    throw new Error(`cannot probe ${py}: ${err}`);
  }
}

function loadExtension() {
  delete require.cache[require.resolve(BUNDLE)];
  return require(BUNDLE);
}

function resetStub() {
  stub.recorded.commands.clear();
  stub.recorded.diagnostics.clear();
  stub.recorded.messages.length = 0;
  stub.recorded.webviews.length = 0;
  for (const k of Object.keys(stub.recorded.providers)) delete stub.recorded.providers[k];
  for (const k of Object.keys(stub.configValues)) delete stub.configValues[k];
  stub.vscode.workspace.textDocuments.length = 0;
  stub.vscode.workspace.workspaceFolders = [{ uri: stub.vscode.Uri.file(WS), name: "workspace", index: 0 }];
}

async function waitFor(what, fn, ms = TIMEOUT_MS) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function context() {
  return { subscriptions: [], extensionPath: ROOT, asAbsolutePath: (p) => path.resolve(ROOT, p), globalState: { get() {}, update: async () => {} }, workspaceState: { get() {}, update: async () => {} } };
}

const token = () => new stub.vscode.CancellationTokenSource().token;
const missing = fs.existsSync(BUNDLE) ? serverMissing() : "dist/extension.js is not built (run npm run bundle)";

if (missing) {
  describe("activation against the real language server", () => {
    it("needs the project's Python and the bundle", () => assert.fail(missing));
  });
}

describe("activation against the real language server", { skip: missing && "see the failure above", timeout: 600000 }, () => {
  let ext;
  let api;
  let doc;
  let tomlDoc;
  let ctx;

  before(async () => {
    resetStub();
    if (process.env.RULEKIT_PYTHON) stub.configValues["rulekit.server.pythonPath"] = process.env.RULEKIT_PYTHON;
    doc = stub.makeTextDocument(RULE_FILE, "rulekit", fs.readFileSync(RULE_FILE, "utf8"));
    // an unsaved edit of the TOML rule file: its diagnostics must come from this text, not the disk
    tomlDoc = stub.makeTextDocument(TOML_FILE, "toml", fs.readFileSync(TOML_FILE, "utf8").replace("rank = 480", 'rank = "high"').replace("(?= )", ""), 2);
    stub.vscode.workspace.textDocuments.push(doc, tomlDoc);
    ext = loadExtension();
    ctx = context();
    api = await ext.activate(ctx);
  });

  after(async () => {
    if (ext) await ext.deactivate();
    for (const d of ctx?.subscriptions ?? []) d.dispose?.();
  });

  it("starts the server and registers the commands", () => {
    assert.equal(api.startProblem, undefined, JSON.stringify(api.startProblem));
    assert.ok(api.client && api.client.isRunning(), "client is running");
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
    const contributed = pkg.contributes.commands.map((c) => c.command);
    assert.deepEqual(contributed.sort(), ["rulekit.attributeJobFolder", "rulekit.restartServer", "rulekit.runTestsInFile", "rulekit.runWorkspaceTests"]);
    for (const id of contributed) assert.ok(stub.recorded.commands.has(id), `command ${id} registered`);
    // the server's own commands (code lens targets) are registered by the client next to ours
    assert.ok(stub.recorded.commands.has("rulekit.runTests"), "server command rulekit.runTests registered by the client");
    assert.deepEqual(api.ruleFolders, [path.join(WS, "rules")]);
  });

  it("publishes the deliberate error with its code and range", async () => {
    const diags = await waitFor("diagnostics for gpu.rule", () => {
      const d = stub.recorded.diagnostics.get(doc.uri.toString());
      return d && d.length ? d : undefined;
    });
    const rk203 = diags.find((d) => String(d.code?.value ?? d.code) === "RK203");
    assert.ok(rk203, `an RK203 diagnostic among ${JSON.stringify(diags.map((d) => [d.code, d.message]))}`);
    assert.match(rk203.message, /GPU_FELL_OF_THE_BUS/);
    assert.equal(rk203.severity, stub.vscode.DiagnosticSeverity.Error);
    const line = doc.getText().split("\n").findIndex((l) => l.includes('emit bad_node "GPU_FELL_OF_THE_BUS"'));
    assert.equal(rk203.range.start.line, line);
    assert.ok(diags.every((d) => !/FellOffTheBus/.test(d.message)), "the healthy rule has no complaint");
  });

  it("syncs TOML files of a rule folder (unsaved text wins over the disk)", async () => {
    // the first publish may predate the client's didOpen (the disk's text, with RK302):
    // wait for the one of the buffer's text (RK103) instead of taking whichever came first
    const diags = await waitFor("diagnostics for nccl.toml from the buffer", () => {
      const d = stub.recorded.diagnostics.get(tomlDoc.uri.toString());
      return d && d.some((x) => String(x.code?.value ?? x.code) === "RK103") ? d : undefined;
    });
    const codes = diags.map((d) => String(d.code?.value ?? d.code));
    assert.ok(codes.includes("RK103"), `the buffer's rank = "high" (RK103) among ${JSON.stringify(codes)}`);
    assert.ok(!codes.includes("RK302"), "not the look-ahead that is only on disk");
  });

  it("answers hover on a symptom name with its registration", async () => {
    const [, provider] = stub.recorded.providers.registerHoverProvider?.[0] ?? [];
    assert.ok(provider, "hover provider registered");
    const lines = doc.getText().split("\n");
    const line = lines.findIndex((l) => l.includes('emit bad_node "GPU_FELL_OFF_THE_BUS"'));
    const col = lines[line].indexOf("GPU_FELL_OFF_THE_BUS") + 3;
    const hover = await provider.provideHover(doc, new stub.vscode.Position(line, col), token());
    assert.ok(hover, "a hover");
    const text = hover.contents.map((c) => (typeof c === "string" ? c : c.value)).join("\n");
    assert.match(text, /GPU_FELL_OFF_THE_BUS/);
    assert.match(text, /hardware/);
    assert.match(text, /950/);
  });

  it("gives code lenses that run the tests", async () => {
    const [, provider] = stub.recorded.providers.registerCodeLensProvider?.[0] ?? [];
    assert.ok(provider, "code lens provider registered");
    const lenses = await waitFor("code lenses", async () => {
      const l = await provider.provideCodeLenses(doc, token());
      return l && l.length ? l : undefined;
    });
    const titles = lenses.map((l) => l.command?.title ?? "");
    assert.ok(titles.some((t) => /Run 2 tests/.test(t)), `a "Run 2 tests" lens among ${JSON.stringify(titles)}`);
    assert.ok(lenses.every((l) => !l.command || l.command.command === "rulekit.runTests"));
  });

  it("runs the file's tests through the server", async () => {
    const summary = await stub.vscode.commands.executeCommand("rulekit.runTestsInFile", doc.uri);
    assert.equal(summary.via, "server");
    assert.equal(summary.total, 2, JSON.stringify(summary));
    assert.equal(summary.failed, 0, JSON.stringify(summary));
    assert.ok(stub.recorded.messages.some((m) => m.level === "info" && /2\/2 passed/.test(m.message)));
  });

  it("attributes a job folder into a diagnosis panel", { skip: !fs.existsSync(EXAMPLE_JOB) && "examples/xid149-nvlink is missing" }, async () => {
    const html = await stub.vscode.commands.executeCommand("rulekit.attributeJobFolder", stub.vscode.Uri.file(EXAMPLE_JOB));
    assert.ok(html, "html returned");
    const expected = JSON.parse(fs.readFileSync(path.join(EXAMPLE_JOB, "expected.json"), "utf8"));
    assert.match(html, new RegExp(expected.root_cause));
    assert.match(html, new RegExp(expected.outcome));
    assert.equal(stub.recorded.webviews.at(-1).webview.html, html);
    assert.doesNotMatch(html, /<script/i);
  });

  it("restarts a server that crashed", async () => {
    const proc = api.client._serverProcess; // private: the only handle on the child process
    assert.ok(proc && proc.pid, "server process");
    stub.recorded.diagnostics.clear();
    process.kill(proc.pid, "SIGKILL");
    await waitFor("a new server process", () => api.client._serverProcess && api.client._serverProcess.pid !== proc.pid && api.client.isRunning());
    await waitFor("diagnostics from the new server", () => {
      const d = stub.recorded.diagnostics.get(doc.uri.toString());
      return d && d.some((x) => String(x.code?.value ?? x.code) === "RK203");
    });
    assert.equal(api.startProblem, undefined);
  });

  it("picks up a rule folder created after activation", async () => {
    const dir = path.join(WS, "new-rules.tmp");
    const file = path.join(dir, "late.rule");
    fs.mkdirSync(dir, { recursive: true });
    try {
      fs.writeFileSync(file, 'symptom "LATE" {\n  outcome unknown\n  sub_domain x\n  rank 1\n  blame none\n}\n');
      const before = api.client;
      for (const w of stub.recorded.watchers) w.created.fire(stub.vscode.Uri.file(file));
      await waitFor("a restart with the new folder", () => api.client && api.client !== before && api.client.isRunning());
      assert.ok(api.ruleFolders.includes(dir), JSON.stringify(api.ruleFolders));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("restarts the server, passing rulekit.server.settings to it", async () => {
    const before = api.client;
    // an unknown server setting: the server answers with a message (it never fails on settings)
    stub.configValues["rulekit.server.settings"] = { noSuchSetting: 1 };
    await stub.vscode.commands.executeCommand("rulekit.restartServer");
    delete stub.configValues["rulekit.server.settings"];
    await waitFor("the server's message about the setting", () => stub.recorded.messages.find((m) => /noSuchSetting/.test(m.message)));
    assert.ok(api.client && api.client !== before && api.client.isRunning());
    const diags = await waitFor("diagnostics after restart", () => {
      const d = stub.recorded.diagnostics.get(doc.uri.toString());
      return d && d.some((x) => String(x.code?.value ?? x.code) === "RK203") ? d : undefined;
    });
    assert.ok(diags.length);
  });
});

const cliMissing = missing || (!fs.existsSync(path.join(path.dirname(python()), "rulekit")) && `no rulekit script next to ${python()}`);
if (cliMissing && !missing) {
  describe("without a language server", () => {
    it("needs the rulekit script next to the project's Python", () => assert.fail(cliMissing));
  });
}

describe("without a language server", { timeout: 60000, skip: cliMissing }, () => {
  it("runs a file's tests with the rulekit CLI and reports its error", async () => {
    resetStub();
    // a server command that exits at once; the CLI is the `rulekit` next to the Python
    const py = python();
    stub.configValues["rulekit.server.command"] = [py, "-c", "import sys; print('config error: no such corpus', file=sys.stderr); sys.exit(3)"];
    const ext = loadExtension();
    const api = await ext.activate(context());
    assert.equal(api.client, undefined);
    assert.ok(api.startProblem, "a start problem is reported");
    // one message, in the server's own words, not the client's generic ones
    assert.equal(api.startProblem.message, "rulekit: the language server failed to start: config error: no such corpus");
    assert.deepEqual(stub.recorded.messages.filter((m) => m.level === "error").map((m) => m.message),
      [`${api.startProblem.message} ${api.startProblem.fix}`]);
    assert.deepEqual(api.launcher.cli, [path.join(path.dirname(py), "rulekit")]);
    const summary = await stub.vscode.commands.executeCommand("rulekit.runTestsInFile", stub.vscode.Uri.file(RULE_FILE));
    assert.equal(summary.via, "cli");
    // the fixture's deliberate RK203 makes the corpus invalid: `rulekit test` exits 2 naming it
    assert.match(summary.error, /`rulekit test` failed: .*RK203/);
    assert.match(stub.recorded.outputs.get("rulekit Tests"), /GPU_FELL_OF_THE_BUS/);
    await ext.deactivate();
  });
});

describe("a server that cannot start", { timeout: 60000, skip: !fs.existsSync(BUNDLE) && "dist/extension.js is not built" }, () => {
  it("says which Python is missing and how to fix it", async () => {
    resetStub();
    stub.configValues["rulekit.server.pythonPath"] = path.join(WS, "no-such-python");
    const ext = loadExtension();
    const api = await ext.activate(context());
    assert.equal(api.client, undefined);
    assert.match(api.startProblem.message, /no-such-python.*was not found/);
    const shown = stub.recorded.messages.find((m) => m.level === "error");
    assert.ok(shown, "an error message was shown");
    assert.match(shown.message, /pip install rulekit-gpu\b/);
    assert.match(shown.message, /rulekit\.server\.pythonPath/);
    assert.deepEqual(shown.items, ["Open Settings", "Show Output"]);
    // without a server the test command falls back to the CLI, which cannot run either: same diagnosis
    const summary = await stub.vscode.commands.executeCommand("rulekit.runTestsInFile", stub.vscode.Uri.file(RULE_FILE));
    assert.equal(summary.via, "cli");
    assert.match(summary.error, /cannot run `rulekit test`: Python `.*no-such-python` was not found/);
    await ext.deactivate();
  });

  it("says rulekit is not installed when the Python lacks it", async (t) => {
    const bare = ["/usr/bin/python3", "/usr/local/bin/python3"].find((p) => {
      try {
        execFileSync(p, ["-c", "import rulekit"], { stdio: "pipe" });
        return false;
      } catch (e) {
        return /No module named/.test(String(e.stderr));
      }
    });
    if (!bare) return t.skip("no Python without rulekit on this machine");
    resetStub();
    stub.configValues["rulekit.server.pythonPath"] = bare;
    const ext = loadExtension();
    const api = await ext.activate(context());
    assert.equal(api.client, undefined);
    assert.match(api.startProblem.message, /rulekit is not installed/);
    assert.match(api.startProblem.fix, /pip install rulekit-gpu\b/);
    await ext.deactivate();
  });
});
