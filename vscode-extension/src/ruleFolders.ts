/**
 * Which folders are rule folders, and the document selector that follows from them.
 *
 * A rule folder is where the loader reads `*.toml`, `*.rule` and `*.py` rule
 * files (docs/rule-authoring.md).  `.rule` files are always rulekit documents;
 * TOML and Python files are only when they sit directly in a rule folder, so a
 * project's other TOML/Python files are left to other extensions.
 * Pure functions; the caller lists files and reads their first bytes.
 */
import * as path from "path";

/** TOML tables that only a rulekit rule file has. */
const TOML_RULE_TABLE = /^\s*\[\[\s*(symptom|extractor|family|catalog|outcome_rule|filter|refiner|case)\s*\]\]/m;
/** Python that defines plugin rules. */
const PY_RULE_IMPORT = /^\s*from\s+rulekit\.plugin\s+import\b|^\s*import\s+rulekit\.plugin\b/m;

/** Whether a file (by name and the start of its text) makes its folder a rule folder. */
export function isRuleFile(fileName: string, head: string): boolean {
  const base = path.basename(fileName);
  if (base.endsWith(".rule") || base.endsWith(".test.toml")) return true;
  if (base.endsWith(".toml")) return TOML_RULE_TABLE.test(head);
  if (base.endsWith(".py")) return PY_RULE_IMPORT.test(head);
  return false;
}

/**
 * Rule folders among `files` (absolute paths with the start of their text),
 * sorted, without duplicates.  `common/` helper folders are not rule folders
 * (the loader never reads them directly).
 */
export function detectRuleFolders(files: { path: string; head: string }[]): string[] {
  const out = new Set<string>();
  for (const f of files) {
    const dir = path.dirname(f.path);
    if (path.basename(dir) === "common") continue;
    if (isRuleFile(f.path, f.head)) out.add(dir);
  }
  return [...out].sort();
}

/** Configured folders (`rulekit.ruleFolders`) made absolute against the first workspace folder. */
export function resolveConfiguredFolders(configured: string[], workspaceDirs: string[]): string[] {
  const base = workspaceDirs[0] ?? process.cwd();
  return configured.filter((f) => f.trim()).map((f) => (path.isAbsolute(f) ? path.normalize(f) : path.resolve(base, f)));
}

/** A glob that matches `dir` literally (glob metacharacters escaped, `/` separators). */
export function globEscape(dir: string): string {
  return dir.split(path.sep).join("/").replace(/[\[\]{}*?!]/g, (c) => `[${c}]`);
}

export interface DocumentFilterLike {
  scheme: string;
  language?: string;
  pattern?: string;
}

/**
 * Documents the language server handles: every `.rule` file, job-test files,
 * TOML and Python files directly inside a rule folder, and sample logs in an
 * `examples/` folder (the server shows which rule matched each line).
 */
export function documentSelector(ruleFolders: string[]): DocumentFilterLike[] {
  const sel: DocumentFilterLike[] = [
    { scheme: "file", language: "rulekit" },
    { scheme: "untitled", language: "rulekit" },
    { scheme: "file", pattern: "**/*.test.toml" },
    { scheme: "file", pattern: "**/examples/**/*.log" },
  ];
  for (const dir of ruleFolders) {
    const g = globEscape(dir);
    sel.push({ scheme: "file", pattern: `${g}/*.toml` }, { scheme: "file", pattern: `${g}/*.py` });
  }
  return sel;
}
