// Pure parts of the extension (from the bundle: server discovery, start-failure
// messages, rule-folder detection, the document selector, the diagnosis page,
// the CLI test report) and the manifest's consistency.  No server needed.
"use strict";
const { describe, it } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("fs");
const Module = require("module");
const path = require("path");
const stub = require("./vscode-stub");

const ROOT = path.resolve(__dirname, "..");
const origLoad = Module._load;
Module._load = function (request, parent, isMain) {
  return request === "vscode" ? stub.vscode : origLoad.call(this, request, parent, isMain);
};
const ext = require(path.join(ROOT, "dist", "extension.js"));
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
const lock = JSON.parse(fs.readFileSync(path.join(ROOT, "package-lock.json"), "utf8"));

describe("resolveLauncher", () => {
  const none = () => false;
  const only = (...ps) => (p) => ps.includes(p);
  const S = (o = {}) => ({ command: [], pythonPath: "", ...o });

  it("prefers rulekit.server.command, then pythonPath, then $RULEKIT_PYTHON", () => {
    const a = ext.resolveLauncher(S({ command: ["/opt/rk/bin/rulekit", "lsp"], pythonPath: "/py" }), { RULEKIT_PYTHON: "/env/py" }, [], none, "linux");
    assert.deepEqual(a.server, ["/opt/rk/bin/rulekit", "lsp"]);
    assert.deepEqual(a.cli, ["/opt/rk/bin/rulekit"]);
    assert.equal(a.source, "command-setting");
    const b = ext.resolveLauncher(S({ pythonPath: "/py" }), { RULEKIT_PYTHON: "/env/py" }, [], none, "linux");
    assert.equal(b.python, "/py");
    assert.deepEqual(b.server.slice(-1), ["lsp"]);
    assert.equal(b.server[1], "-c");
    const c = ext.resolveLauncher(S(), { RULEKIT_PYTHON: "/env/py" }, [], none, "linux");
    assert.equal(c.python, "/env/py");
    assert.equal(c.source, "env");
  });

  it("finds a .venv in the workspace folder or a parent, then rulekit on PATH, then python3", () => {
    const v = ext.resolveLauncher(S(), {}, ["/repo/sub/ws"], only("/repo/.venv/bin/python"), "linux");
    assert.equal(v.python, "/repo/.venv/bin/python");
    assert.equal(v.source, "venv");
    const p = ext.resolveLauncher(S(), { PATH: "/a:/b" }, ["/ws"], only("/b/rulekit"), "linux");
    assert.deepEqual(p.server, ["/b/rulekit", "lsp"]);
    assert.equal(p.source, "path");
    const d = ext.resolveLauncher(S(), { PATH: "/a" }, ["/ws"], none, "linux");
    assert.equal(d.python, "python3");
    assert.equal(d.source, "default");
  });
});

describe("explainStartFailure", () => {
  const py = ext.resolveLauncher({ command: [], pythonPath: "/x/python" }, {}, [], () => false, "linux");

  it("missing interpreter: names it and gives the fix", () => {
    const p = ext.explainStartFailure(py, "ENOENT", "");
    assert.match(p.message, /\/x\/python.*was not found/);
    assert.match(p.fix, /pip install rulekit-gpu\b/);
    assert.match(p.fix, /rulekit\.server\.pythonPath/);
  });

  it("rulekit not installed / too old / other errors", () => {
    const nm = ext.explainStartFailure(py, undefined, "Traceback...\nModuleNotFoundError: No module named 'rulekit'\n");
    assert.match(nm.message, /rulekit is not installed in Python `\/x\/python`/);
    assert.match(nm.fix, /\/x\/python -m pip install rulekit-gpu\b/);
    const old = ext.explainStartFailure(py, undefined, "ModuleNotFoundError: No module named 'rulekit.cli.lsp'");
    assert.match(old.message, /no language server/);
    assert.match(old.fix, /pip install -U rulekit-gpu\b/);
    const other = ext.explainStartFailure(py, undefined, "line1\nline2\nValueError: boom\n");
    assert.match(other.message, /language server failed to start: .*ValueError: boom/);
  });

  it("CLI runs: says which command failed, with its error line", () => {
    const t = ext.explainStartFailure(py, undefined, "x.rule:23:3: error RK203 unregistered symptom\n   23 |  emit\n      |  ^^^^\n", "rulekit test");
    assert.equal(t.message, "rulekit: `rulekit test` failed: x.rule:23:3: error RK203 unregistered symptom");
    const gone = ext.explainStartFailure(py, "ENOENT", "", "rulekit attribute");
    assert.match(gone.message, /cannot run `rulekit attribute`: Python `\/x\/python` was not found/);
  });
});

describe("rule folders and the document selector", () => {
  it("detects folders by their rule files, not common/ helpers or ordinary TOML/Python", () => {
    const folders = ext.detectRuleFolders([
      { path: "/ws/bundled_rules/xid.toml", head: "author = \"x\"\n\n[[symptom]]\nname = \"A\"\n" },
      { path: "/ws/bundled_rules/common/helpers.py", head: "from rulekit.plugin import EventSpec\n" },
      { path: "/ws/dsl/gpu.rule", head: "" },
      { path: "/ws/plugins/filters.py", head: "import re\nfrom rulekit.plugin import filter_def\n" },
      { path: "/ws/cases/jobs.test.toml", head: "" },
      { path: "/ws/pyproject.toml", head: "[project]\nname = \"x\"\n" },
      { path: "/ws/tools/script.py", head: "import rulekit\n" },
    ]);
    assert.deepEqual(folders, ["/ws/bundled_rules", "/ws/cases", "/ws/dsl", "/ws/plugins"]);
  });

  it("selects .rule files everywhere, TOML/Python only inside rule folders", () => {
    const sel = ext.documentSelector(["/ws/bundled_rules"]);
    const doc = (p, lang) => stub.makeTextDocument(p, lang, "");
    const match = (d) => stub.vscode.languages.match(sel, d) > 0;
    assert.ok(match(doc("/anywhere/x.rule", "rulekit")));
    assert.ok(match(doc("/ws/bundled_rules/nccl.toml", "toml")));
    assert.ok(match(doc("/ws/bundled_rules/filters.py", "python")));
    assert.ok(match(doc("/ws/tests/jobs.test.toml", "toml")));
    assert.ok(match(doc("/ws/examples/job1/syslog/node-01.log", "log")));
    assert.ok(!match(doc("/ws/pyproject.toml", "toml")));
    assert.ok(!match(doc("/ws/bundled_rules/common/helpers.py", "python")));
    assert.ok(!match(doc("/ws/setup.py", "python")));
  });
});

describe("diagnosis page", () => {
  it("shows outcome, root cause and evidence, escaped, with no scripts", () => {
    const html = ext.renderAttributionHtml({
      job_id: "j<1>", outcome: "hardware", sub_domain: "gpu", ambiguous: false,
      root_cause: { symptom: "XID-79", node: "node-02", rule: "R", evidence: [{ source: "syslog/n.log", line_num: 5, node: "node-02", symptom: "XID-79", rule: "R", datum: "<script>alert(1)</script>" }] },
      bad_nodes: [{ node: "node-02", symptoms: ["XID-79"] }], interesting_nodes: [], symptoms: ["XID-79"], collectors: {},
    }, "/jobs/j1");
    assert.match(html, /j&lt;1&gt;/);
    assert.match(html, /hardware/);
    assert.match(html, /XID-79/);
    assert.match(html, /syslog\/n\.log:5/);
    assert.doesNotMatch(html, /<script/i);
    assert.match(html, /Content-Security-Policy/);
    const err = ext.renderAttributionHtml({ job_dir: "/jobs/x", error: "no job.toml" }, "/jobs/x");
    assert.match(err, /Attribution failed/);
    assert.match(err, /no job\.toml/);
  });
});

describe("rulekit test --format json report", () => {
  it("counts passes and lists failures with their location", () => {
    const s = ext.parseCliTestReport(JSON.stringify({
      tool: "rulekit test", summary: { passed: 3, failed: 1, error: 0 },
      results: [{ kind: "line", name: "R#1", status: "passed" },
        { kind: "example", name: "job", status: "failed", file: "examples/job/expected.json", line: 1, mismatches: ["outcome: expected 'a', got 'b'"] }],
    }));
    assert.equal(s.total, 4);
    assert.equal(s.failed, 1);
    assert.deepEqual(s.failures, [{ name: "job", message: "outcome: expected 'a', got 'b'", file: "examples/job/expected.json", line: 1 }]);
    assert.equal(ext.parseCliTestReport("Traceback ..."), undefined);
  });
});

describe("manifest", () => {
  it("pins @types/vscode to the engines.vscode floor (vsce refuses a newer one)", () => {
    assert.equal(pkg.engines.vscode, "^1.91.0");
    assert.equal(pkg.devDependencies["@types/vscode"], "1.91.0");
    assert.equal(lock.packages["node_modules/@types/vscode"].version, "1.91.0");
  });

  it("contributes the rulekit language, its grammars and files that exist", () => {
    const lang = pkg.contributes.languages.find((l) => l.id === "rulekit");
    assert.deepEqual(lang.extensions, [".rule"]);
    assert.ok(fs.existsSync(path.join(ROOT, lang.configuration)));
    const scopes = pkg.contributes.grammars.map((g) => g.scopeName).sort();
    assert.deepEqual(scopes, ["markdown.rulekit.codeblock", "source.rulekit"]);
    for (const g of pkg.contributes.grammars) {
      const grammar = JSON.parse(fs.readFileSync(path.join(ROOT, g.path), "utf8"));
      assert.equal(grammar.scopeName, g.scopeName);
    }
    assert.ok(pkg.activationEvents.includes("onLanguage:rulekit"));
    assert.ok(pkg.activationEvents.some((e) => e.startsWith("workspaceContains:")));
  });

  it("declares the settings the extension reads", () => {
    const props = Object.keys(pkg.contributes.configuration.properties).sort();
    assert.deepEqual(props, ["rulekit.ruleFolders", "rulekit.server.command", "rulekit.server.pythonPath", "rulekit.server.settings", "rulekit.trace.server"]);
    const src = fs.readFileSync(path.join(ROOT, "src", "extension.ts"), "utf8");
    for (const key of ["server.command", "server.pythonPath", "server.settings", "ruleFolders"]) assert.ok(src.includes(`"${key}"`), key);
  });

  it("language configuration: # comments, brackets, auto-closing", () => {
    const lc = JSON.parse(fs.readFileSync(path.join(ROOT, "language-configuration.json"), "utf8"));
    assert.equal(lc.comments.lineComment, "#");
    assert.deepEqual(lc.brackets.slice(0, 2), [["{", "}"], ["[", "]"]]);
    assert.ok(lc.autoClosingPairs.some((p) => p.open === "\""));
    assert.ok(new RegExp(lc.indentationRules.increaseIndentPattern).test("extractor X {"));
    assert.ok(!new RegExp(lc.indentationRules.increaseIndentPattern).test('  emit bad_node "X" fields { a = "b" }'));
  });
});
