// Tokenize text with the extension's TextMate grammars the way VS Code does
// (vscode-textmate + vscode-oniguruma).  Used by grammar.test.js; run directly
// to print the tokens of a file: `node test/tokenize.js FILE [scope]`.
"use strict";
const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const onig = require("vscode-oniguruma");

const ROOT = path.resolve(__dirname, "..");
const GRAMMARS = {
  "source.rulekit": path.join(ROOT, "syntaxes", "rulekit.tmLanguage.json"),
  "markdown.rulekit.codeblock": path.join(ROOT, "syntaxes", "rulekit-markdown-injection.json"),
  "text.html.markdown": path.join(__dirname, "grammars", "markdown-min.tmLanguage.json"),
};

let registryPromise;
function registry() {
  if (!registryPromise) {
    const wasm = fs.readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm")).buffer;
    const onigLib = onig.loadWASM(wasm).then(() => ({
      createOnigScanner: (patterns) => new onig.OnigScanner(patterns),
      createOnigString: (s) => new onig.OnigString(s),
    }));
    registryPromise = Promise.resolve(new vsctm.Registry({
      onigLib,
      loadGrammar: async (scope) =>
        GRAMMARS[scope] ? vsctm.parseRawGrammar(fs.readFileSync(GRAMMARS[scope], "utf8"), GRAMMARS[scope]) : null,
      getInjections: (scope) => (scope === "text.html.markdown" ? ["markdown.rulekit.codeblock"] : []),
    }));
  }
  return registryPromise;
}

/** [{line, text, scopes: string[]}] for every token of `text`. */
async function tokenize(text, scope = "source.rulekit") {
  const grammar = await (await registry()).loadGrammar(scope);
  const out = [];
  let stack = vsctm.INITIAL;
  text.split(/\r?\n/).forEach((line, i) => {
    const r = grammar.tokenizeLine(line, stack);
    for (const t of r.tokens) out.push({ line: i + 1, text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes });
    stack = r.ruleStack;
  });
  return out;
}

module.exports = { tokenize, GRAMMARS };

/** Tokens of `text` that carry an invalid.* scope (a valid rule file must have none). */
async function invalidTokens(text, scope = "source.rulekit") {
  return (await tokenize(text, scope)).filter((t) => t.scopes.some((s) => s.startsWith("invalid.")));
}

module.exports.invalidTokens = invalidTokens;

if (require.main === module) {
  const args = process.argv.slice(2);
  if (args[0] === "--no-invalid") {
    // `node test/tokenize.js --no-invalid FILE...`: exit 1 listing every invalid.* token of valid rule files
    (async () => {
      let bad = 0;
      for (const f of args.slice(1)) {
        for (const t of await invalidTokens(fs.readFileSync(f, "utf8"))) {
          bad++;
          console.log(`${f}:${t.line}: ${JSON.stringify(t.text)} ${t.scopes.slice(1).join(" ")}`);
        }
      }
      console.log(`${args.length - 1} files, ${bad} invalid tokens`);
      process.exit(bad ? 1 : 0);
    })().catch((err) => { console.error(err.message); process.exit(2); });
  } else {
    const [file, scope] = args;
    tokenize(fs.readFileSync(file, "utf8"), scope).then((toks) => {
      for (const t of toks) console.log(`${t.line}\t${JSON.stringify(t.text)}\t${t.scopes.slice(1).join(" ")}`);
    }, (err) => { console.error(err.message); process.exit(1); });
  }
}
