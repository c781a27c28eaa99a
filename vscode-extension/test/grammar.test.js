// Grammar coverage: every scope the TextMate grammars can produce must show up
// when tokenizing the sample files under test/syntax/ (so a rule whose regex no
// longer matches, or that no sample exercises, fails the build), the samples
// must tokenize without errors, and the README's ```rule blocks must be coloured
// by the injection grammar.  Scope-by-scope assertions are in test/syntax/*
// (run by vscode-tmgrammar-test).
"use strict";
const { describe, it } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("fs");
const path = require("path");
const { tokenize, GRAMMARS } = require("./tokenize");

const SYNTAX = path.join(__dirname, "syntax");
const ROOT = path.resolve(__dirname, "..");

/** Every scope name a grammar declares (name / contentName / capture names), `$n` captures excluded. */
function declaredScopes(grammar) {
  const out = new Set();
  const visit = (node) => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== "object") return;
    for (const [k, v] of Object.entries(node)) {
      if ((k === "name" || k === "contentName") && typeof v === "string") v.split(/\s+/).forEach((s) => s && out.add(s));
      else visit(v);
    }
  };
  visit(grammar.patterns);
  visit(grammar.repository);
  return out;
}

async function scopesOf(files, scope) {
  const seen = new Set();
  for (const f of files) for (const t of await tokenize(fs.readFileSync(f, "utf8"), scope)) t.scopes.forEach((s) => seen.add(s));
  return seen;
}

describe("TextMate grammar", () => {
  it("every scope of the DSL grammar is produced by a sample", async () => {
    const grammar = JSON.parse(fs.readFileSync(GRAMMARS["source.rulekit"], "utf8"));
    const samples = fs.readdirSync(SYNTAX).filter((f) => f.endsWith(".rule")).map((f) => path.join(SYNTAX, f));
    assert.ok(samples.length >= 2, "samples exist");
    const seen = await scopesOf(samples, "source.rulekit");
    const missing = [...declaredScopes(grammar)].filter((s) => !seen.has(s)).sort();
    assert.deepEqual(missing, [], `scopes no sample exercises: ${missing.join(", ")}`);
  });

  it("the valid sample has no invalid.* token", async () => {
    const toks = await tokenize(fs.readFileSync(path.join(SYNTAX, "all-constructs.rule"), "utf8"));
    const bad = toks.filter((t) => t.scopes.some((s) => s.startsWith("invalid.")));
    assert.deepEqual(bad.map((t) => `${t.line}: ${t.text}`), []);
  });

  it("every top-level scope of the injection grammar is produced by the Markdown sample", async () => {
    const inj = JSON.parse(fs.readFileSync(GRAMMARS["markdown.rulekit.codeblock"], "utf8"));
    const seen = await scopesOf([path.join(SYNTAX, "fenced.md")], "text.html.markdown");
    const missing = [...declaredScopes(inj)].filter((s) => !seen.has(s)).sort();
    assert.deepEqual(missing, []);
  });

  it("colours the README's ```rule blocks with source.rulekit", async () => {
    const toks = await tokenize(fs.readFileSync(path.join(ROOT, "README.md"), "utf8"), "text.html.markdown");
    const inRule = toks.filter((t) => t.scopes.includes("meta.embedded.block.rulekit"));
    assert.ok(inRule.some((t) => t.text === "symptom" && t.scopes.includes("keyword.declaration.symptom.rulekit")));
    assert.ok(inRule.some((t) => t.text === "XID-79-FALLEN_OFF_THE_BUS" && t.scopes.includes("entity.name.type.symptom.rulekit")));
    assert.ok(!inRule.some((t) => t.scopes.some((s) => s.startsWith("invalid."))), "no invalid token in the README example");
    // the ```sh block is not ours
    assert.ok(!toks.some((t) => t.text.includes("pip install rulekit") && t.scopes.includes("meta.embedded.block.rulekit")));
  });
});
