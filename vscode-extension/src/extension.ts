/**
 * The rulekit VS Code extension: starts `rulekit lsp` over stdio with
 * vscode-languageclient for `.rule` files and the TOML/Python files of rule
 * folders, and adds four commands (run the tests of a file, run all tests,
 * attribute a job folder into a diagnosis panel, restart the server).
 *
 * Wiring only: deciding the command line (server.ts), the rule folders
 * (ruleFolders.ts) and the diagnosis page (attribution.ts) are pure modules.
 * Everything the language offers (diagnostics, hover, lenses, ...) comes from
 * the server; this file must not re-implement any of it.
 */
import { spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import * as readline from "readline";
import * as vscode from "vscode";
import {
  CloseAction,
  ExecuteCommandRequest,
  ErrorAction,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
} from "vscode-languageclient/node";
import { renderAttributionHtml } from "./attribution";
import { detectRuleFolders, documentSelector, isRuleFile, resolveConfiguredFolders } from "./ruleFolders";
import { explainStartFailure, Launcher, preflight, resolveLauncher, StartProblem } from "./server";

export { renderAttributionHtml } from "./attribution";
export { detectRuleFolders, documentSelector, isRuleFile } from "./ruleFolders";
export { explainStartFailure, resolveLauncher } from "./server";

const MAX_RESTARTS = 4;
const RESTART_WINDOW_MS = 3 * 60 * 1000;
const EXCLUDE = "**/{node_modules,.venv,venv,.git,dist,build,__pycache__}/**";
const MAX_SCAN = 5000;

/** What `activate` returns: a read-only view for other extensions and the activation test. */
export interface RulekitApi {
  readonly client: LanguageClient | undefined;
  readonly launcher: Launcher | undefined;
  readonly ruleFolders: string[];
  readonly startProblem: StartProblem | undefined;
  /** Resolves when the current (re)start attempt is over, started or not. */
  ready(): Promise<void>;
}

/**
 * The language client, quiet while starting: a server that cannot start gets
 * one message from `startServer` (with the fix), not the client's generic ones.
 */
class RulekitClient extends LanguageClient {
  quietStart = true;

  override error(message: string, data?: unknown, showNotification: boolean | "force" = true): void {
    super.error(message, data, this.quietStart ? false : showNotification);
  }
}

/** Server stdout/stderr handling that also keeps the last stderr lines, to explain a failed start. */
function recordingStdio(): { stdio: NonNullable<LanguageClientOptions["stdioOptions"]>; recent: () => string } {
  let lines: string[] = [];
  const lineByLine = (input: NodeJS.ReadableStream, sink: (line: string) => void) =>
    readline.createInterface({ input, crlfDelay: Infinity, terminal: false, historySize: 0 }).on("line", sink);
  return {
    stdio: {
      stdout: (input, channel) => lineByLine(input, (l) => channel.info(l)),
      stderr: (input, channel) => lineByLine(input, (l) => {
        lines = [...lines.slice(-40), l];
        channel.error(l);
      }),
    },
    recent: () => lines.join("\n"),
  };
}

let client: RulekitClient | undefined;
let launcher: Launcher | undefined;
let ruleFolders: string[] = [];
let startProblem: StartProblem | undefined;
let starting: Promise<void> = Promise.resolve();
let crashes: number[] = [];
let serverOutput: vscode.LogOutputChannel;
let testOutput: vscode.OutputChannel;

function workspaceDirs(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
}

function settings() {
  const cfg = vscode.workspace.getConfiguration("rulekit");
  const command = cfg.get<string[] | string>("server.command", []);
  return {
    server: {
      command: Array.isArray(command) ? command.filter((s) => typeof s === "string" && s !== "") : command ? [command] : [],
      pythonPath: cfg.get<string>("server.pythonPath", "") ?? "",
    },
    serverSettings: cfg.get<Record<string, unknown>>("server.settings", {}) ?? {},
    ruleFolders: cfg.get<string[]>("ruleFolders", []) ?? [],
  };
}

/** Configured rule folders, else the ones found in the workspace. */
async function findRuleFolders(): Promise<string[]> {
  const configured = settings().ruleFolders;
  if (configured.length) return resolveConfiguredFolders(configured, workspaceDirs());
  const uris = await vscode.workspace.findFiles("**/*.{rule,toml,py}", EXCLUDE, MAX_SCAN);
  const files = uris.filter((u) => u.scheme === "file").map((u) => ({ path: u.fsPath, head: readHead(u.fsPath) }));
  return detectRuleFolders(files);
}

async function showProblem(problem: StartProblem): Promise<void> {
  serverOutput.appendLine(`${problem.message}\nFix: ${problem.fix}`);
  const choice = await vscode.window.showErrorMessage(`${problem.message} ${problem.fix}`, "Open Settings", "Show Output");
  if (choice === "Open Settings") await vscode.commands.executeCommand("workbench.action.openSettings", "rulekit.server");
  else if (choice === "Show Output") serverOutput.show(true);
}

/** Start the server; never throws (a failure becomes `startProblem` and one message). */
async function startServer(): Promise<void> {
  try {
    await startServerOrThrow();
  } catch (err) {
    client = undefined;
    startProblem = {
      message: `rulekit: the language server could not be started: ${err instanceof Error ? err.message : String(err)}`,
      fix: "See Output > rulekit Language Server, then run \"rulekit: Restart server\".",
    };
    void showProblem(startProblem);
  }
}

async function startServerOrThrow(): Promise<void> {
  const s = settings();
  launcher = resolveLauncher(s.server, process.env, workspaceDirs(), (p) => fs.existsSync(p));
  ruleFolders = await findRuleFolders();
  startProblem = undefined;
  crashes = [];
  serverOutput.appendLine(`rulekit: starting ${launcher.server.join(" ")} (chosen by ${launcher.source})`);
  serverOutput.appendLine(`rulekit: rule folders: ${ruleFolders.length ? ruleFolders.join(", ") : "(none found; .rule files only)"}`);

  const problem = await preflight(launcher);
  if (problem) {
    startProblem = problem;
    void showProblem(problem);
    return;
  }
  const serverOptions: ServerOptions = {
    command: launcher.server[0],
    args: launcher.server.slice(1),
    options: { cwd: workspaceDirs()[0], env: { ...process.env, PYTHONUNBUFFERED: "1" } },
  };
  const configured = resolveConfiguredFolders(s.ruleFolders, workspaceDirs());
  const recording = recordingStdio();
  let initialized = false;
  const clientOptions: LanguageClientOptions = {
    documentSelector: documentSelector(ruleFolders),
    outputChannel: serverOutput,
    stdioOptions: recording.stdio,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    // the server finds rule folders itself; a configured list makes them one corpus
    initializationOptions: { ...s.serverSettings, ...(configured.length ? { ruleFolders: configured } : {}) },
    synchronize: {
      fileEvents: vscode.workspace.createFileSystemWatcher("**/*.{rule,toml,py}"),
    },
    // a failed initialize is reported once, by startServer, with the fix
    initializationFailedHandler: () => false,
    errorHandler: {
      error: () => ({ action: ErrorAction.Continue }),
      closed: () => {
        // a server that dies before it ever answered will die again: report it instead of looping;
        // one that crashed later is restarted, at most MAX_RESTARTS times in RESTART_WINDOW_MS
        const now = Date.now();
        crashes = crashes.filter((t) => now - t < RESTART_WINDOW_MS);
        crashes.push(now);
        if (initialized && crashes.length <= MAX_RESTARTS) return { action: CloseAction.Restart };
        const problem = initialized
          ? { message: `rulekit: the language server crashed ${crashes.length} times in ${RESTART_WINDOW_MS / 60000} minutes and was not restarted.`,
            fix: "See Output > rulekit Language Server, then run \"rulekit: Restart server\"." }
          : undefined;
        if (problem) {
          startProblem = problem;
          void showProblem(problem);
        }
        return { action: CloseAction.DoNotRestart, handled: true }; // reported here or by startServer
      },
    },
  };
  const c = new RulekitClient("rulekit", "rulekit Language Server", serverOptions, clientOptions);
  client = c;
  try {
    await c.start();
    initialized = true;
    c.quietStart = false;
  } catch (err) {
    client = undefined;
    const e = err as NodeJS.ErrnoException;
    // the server's own words (its stderr, in the output channel) explain more than the client's error;
    // give the last of it a moment to arrive after the process exited
    await new Promise((r) => setTimeout(r, 300));
    const said = recording.recent().trim();
    startProblem = explainStartFailure(launcher, e?.code, said || String(e?.message ?? err));
    void showProblem(startProblem);
  }
}

async function stopServer(): Promise<void> {
  const c = client;
  client = undefined;
  if (c) {
    try {
      await c.stop(5000);
    } catch {
      // already dead
    }
  }
}

function restart(): Promise<void> {
  starting = starting.then(stopServer).then(startServer);
  return starting;
}

/** Run the rulekit CLI, streaming its output to the "rulekit Tests" channel. */
function currentLauncher(): Launcher {
  return launcher ?? resolveLauncher(settings().server, process.env, workspaceDirs(), (p) => fs.existsSync(p));
}

function runCli(args: string[], cwd: string | undefined): Promise<{ code: number; stdout: string; stderr: string; errorCode?: string }> {
  const l = currentLauncher();
  return new Promise((resolve) => {
    let stdout = "";
    let stderr = "";
    const p = spawn(l.cli[0], [...l.cli.slice(1), ...args], { cwd, env: { ...process.env, NO_COLOR: "1" } });
    p.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    p.on("error", (e: NodeJS.ErrnoException) => resolve({ code: -1, stdout, stderr: `${stderr}${e.message}`, errorCode: e.code }));
    p.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** The server's test commands (rulekit_lsp/features/lens.py): run through it, lenses and diagnostics update. */
const SERVER_RUN_TESTS = "rulekit.runTests";
const SERVER_RUN_ALL_TESTS = "rulekit.runAllTests";

/** What a test run reports (the server's command result; the CLI fallback fills what it can). */
export interface TestSummary {
  passed: number;
  failed: number;
  total: number;
  failures: { name: string; message: string; file?: string | null; line?: number | null }[];
  error?: string;
  via: "server" | "cli";
}

function serverHasCommand(name: string): boolean {
  const cmds = client?.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
  return client?.isRunning() === true && cmds.includes(name);
}

function report(label: string, s: TestSummary, notify: boolean): void {
  testOutput.appendLine(`${label}: ${s.passed}/${s.total} passed${s.failed ? `, ${s.failed} failed` : ""}${s.error ? ` (${s.error})` : ""}`);
  for (const f of s.failures) {
    testOutput.appendLine(`  FAIL ${f.name}${f.file ? `  ${f.file}${f.line ? `:${f.line}` : ""}` : ""}`);
    testOutput.appendLine(`       ${f.message.split("\n").join("\n       ")}`);
  }
  if (!notify) return;
  if (s.error) void vscode.window.showWarningMessage(`rulekit: ${label}: ${s.error}`);
  else if (s.failed) void vscode.window.showWarningMessage(`rulekit: ${label}: ${s.failed} of ${s.total} failed (Output > rulekit Tests).`);
  else void vscode.window.showInformationMessage(`rulekit: ${label}: ${s.passed}/${s.total} passed.`);
}

/** Run tests through the server when it offers `command`, else with `rulekit test PATHS`. */
async function runTests(command: string, args: unknown[], cliPaths: string[], label: string): Promise<TestSummary> {
  testOutput.clear();
  const summary = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `rulekit: running ${label}` },
    async (): Promise<TestSummary> => {
      if (client && serverHasCommand(command)) {
        const r = await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
        return { passed: 0, failed: 0, total: 0, failures: [], ...(r as object), via: "server" };
      }
      testOutput.appendLine(`$ rulekit test ${cliPaths.join(" ")} --format json`);
      const r = await runCli(["test", ...cliPaths, "--format", "json"], workspaceDirs()[0]);
      const parsed = r.code === 0 || r.code === 1 ? parseCliTestReport(r.stdout) : undefined;
      if (parsed) return parsed;
      testOutput.append(r.stdout + r.stderr);
      const problem = explainStartFailure(currentLauncher(), r.errorCode, r.stderr, "rulekit test");
      return { passed: 0, failed: 0, total: 0, failures: [], error: `${problem.message} ${problem.fix}`, via: "cli" };
    },
  );
  // the server's run-all command shows its own summary message
  report(label, summary, !(summary.via === "server" && command === SERVER_RUN_ALL_TESTS));
  testOutput.show(true);
  return summary;
}

/** A summary from `rulekit test --format json` ({summary, results}); undefined if it is not that. */
export function parseCliTestReport(stdout: string): TestSummary | undefined {
  let doc: { summary?: Record<string, number>; results?: Record<string, unknown>[] };
  try {
    doc = JSON.parse(stdout);
  } catch {
    return undefined;
  }
  if (!doc || typeof doc !== "object" || !doc.summary) return undefined;
  const passed = Number(doc.summary.passed ?? 0);
  const failed = Number(doc.summary.failed ?? 0) + Number(doc.summary.error ?? 0);
  const failures = (doc.results ?? []).filter((r) => r.status !== "passed").map((r) => ({
    name: String(r.name ?? r.rule ?? "?"),
    message: Array.isArray(r.mismatches) && r.mismatches.length ? r.mismatches.join("\n") : String(r.message ?? r.status ?? ""),
    file: typeof r.file === "string" ? r.file : null,
    line: typeof r.line === "number" ? r.line : null,
  }));
  return { passed, failed, total: passed + failed, failures, via: "cli" };
}

async function runTestsInFile(uri?: vscode.Uri): Promise<TestSummary | undefined> {
  const target = uri ?? vscode.window.activeTextEditor?.document.uri;
  if (!target || target.scheme !== "file") {
    void vscode.window.showWarningMessage("rulekit: open a rule file (.rule, .toml, .py) to run its tests.");
    return undefined;
  }
  return runTests(SERVER_RUN_TESTS, [{ uri: target.toString() }], [target.fsPath], `tests in ${path.basename(target.fsPath)}`);
}

async function runAllTests(): Promise<TestSummary | undefined> {
  const folders = ruleFolders.length ? ruleFolders : workspaceDirs();
  if (!folders.length && !client) {
    void vscode.window.showWarningMessage("rulekit: no rule folders in this workspace.");
    return undefined;
  }
  return runTests(SERVER_RUN_ALL_TESTS, [], folders, "all rule tests");
}

/** `rulekit attribute DIR --format json` into a webview panel. */
async function attributeJobFolder(uri?: vscode.Uri): Promise<string | undefined> {
  let dir = uri?.scheme === "file" ? uri.fsPath : undefined;
  if (!dir) {
    const picked = await vscode.window.showOpenDialog({
      canSelectFolders: true, canSelectFiles: false, canSelectMany: false,
      openLabel: "Attribute", title: "Job folder (job.toml, applog/, syslog/, ...)",
    });
    if (!picked?.length) return undefined;
    dir = picked[0].fsPath;
  }
  const args = ["attribute", dir, "--format", "json"];
  for (const r of resolveConfiguredFolders(settings().ruleFolders, workspaceDirs())) args.push("--rules", r);
  const r = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `rulekit: attributing ${path.basename(dir)}` },
    () => runCli(args, workspaceDirs()[0]),
  );
  let result: unknown;
  try {
    result = JSON.parse(r.stdout);
    // `--format json` is a list of results (one here); an older rulekit printed the object
    if (Array.isArray(result)) result = result[0] ?? { error: (r.stderr || "rulekit attribute printed no result").trim() };
  } catch {
    const p = explainStartFailure(currentLauncher(), r.errorCode, r.stderr, "rulekit attribute");
    result = { error: r.errorCode ? `${p.message}\n${p.fix}` : (r.stderr || r.stdout || `rulekit attribute exited with ${r.code}`).trim() };
  }
  const html = renderAttributionHtml(result, dir);
  const panel = vscode.window.createWebviewPanel("rulekit.attribution", `Attribution: ${path.basename(dir)}`,
    vscode.ViewColumn.Beside, { enableScripts: false });
  panel.webview.html = html;
  return html;
}

/** File head for rule-file detection (empty when unreadable). */
function readHead(p: string): string {
  try {
    const fd = fs.openSync(p, "r");
    try {
      const buf = Buffer.alloc(8192);
      return buf.toString("utf8", 0, fs.readSync(fd, buf, 0, buf.length, 0));
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return "";
  }
}

/**
 * A rule file created in a folder that is not a rule folder yet (auto-detection
 * only): restart so the document selector covers the new folder.
 */
function watchNewRuleFolders(): vscode.Disposable {
  const watcher = vscode.workspace.createFileSystemWatcher("**/*.{rule,toml,py}", false, true, true);
  let timer: NodeJS.Timeout | undefined;
  watcher.onDidCreate((uri) => {
    if (uri.scheme !== "file" || settings().ruleFolders.length) return;
    const dir = path.dirname(uri.fsPath);
    if (ruleFolders.includes(dir) || path.basename(dir) === "common" || !isRuleFile(uri.fsPath, readHead(uri.fsPath))) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => void restart(), 1000);
  });
  return vscode.Disposable.from(watcher, { dispose: () => timer && clearTimeout(timer) });
}

export async function activate(context: vscode.ExtensionContext): Promise<RulekitApi> {
  serverOutput = vscode.window.createOutputChannel("rulekit Language Server", { log: true });
  testOutput = vscode.window.createOutputChannel("rulekit Tests");
  context.subscriptions.push(
    serverOutput,
    testOutput,
    vscode.commands.registerCommand("rulekit.runTestsInFile", runTestsInFile),
    vscode.commands.registerCommand("rulekit.runWorkspaceTests", runAllTests),
    vscode.commands.registerCommand("rulekit.attributeJobFolder", attributeJobFolder),
    vscode.commands.registerCommand("rulekit.restartServer", restart),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("rulekit.server") || e.affectsConfiguration("rulekit.ruleFolders")) void restart();
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => void restart()),
    watchNewRuleFolders(),
  );
  starting = startServer();
  await starting;
  return {
    get client() { return client; },
    get launcher() { return launcher; },
    get ruleFolders() { return ruleFolders; },
    get startProblem() { return startProblem; },
    ready: () => starting,
  };
}

export async function deactivate(): Promise<void> {
  await stopServer();
}
