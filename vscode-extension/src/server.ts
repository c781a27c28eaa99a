/**
 * How to run rulekit: which command starts the language server / the CLI, and
 * what to tell the user when it cannot start.
 *
 * Pure functions over plain data (settings, environment, an `exists` probe)
 * plus `preflight`, the one place that spawns a short check process.  Nothing
 * here touches the `vscode` API, so the activation test can call it directly.
 */
import { execFile } from "child_process";
import * as path from "path";

/** The settings this module reads (`rulekit.server.*`). */
export interface ServerSettings {
  command: string[];
  pythonPath: string;
}

/** A resolved way to run rulekit. */
export interface Launcher {
  /** How the command was chosen, for messages: "setting", "env", "venv", "path", "default". */
  source: "command-setting" | "python-setting" | "env" | "venv" | "path" | "default";
  /** Python interpreter when rulekit is run through Python (absent for `rulekit.server.command` / console script). */
  python?: string;
  /** argv prefix that runs the `rulekit` CLI (append a subcommand and its arguments). */
  cli: string[];
  /** argv of the language server. */
  server: string[];
}

/** `python -c ...` that runs the rulekit CLI whether or not the console script is installed. */
const CLI_SHIM = "import sys; sys.argv[0] = 'rulekit'; from rulekit.cli import main; main()";

export function pythonLauncher(python: string, source: Launcher["source"]): Launcher {
  const cli = [python, "-c", CLI_SHIM];
  return { source, python, cli, server: [...cli, "lsp"] };
}

function venvPythons(dir: string, platform: NodeJS.Platform): string[] {
  const rel = platform === "win32" ? ["Scripts", "python.exe"] : ["bin", "python"];
  return [".venv", "venv"].map((v) => path.join(dir, v, ...rel));
}

/**
 * Decide how to start rulekit.  Order: `rulekit.server.command` (server only;
 * the CLI then uses the `rulekit` next to it), `rulekit.server.pythonPath`,
 * `$RULEKIT_PYTHON`, a `.venv`/`venv` in a workspace folder or one of its
 * parents, `rulekit` on PATH, then `python3` (`python` on Windows).
 */
export function resolveLauncher(
  settings: ServerSettings,
  env: Record<string, string | undefined>,
  workspaceDirs: string[],
  exists: (p: string) => boolean,
  platform: NodeJS.Platform = process.platform,
): Launcher {
  if (settings.command.length > 0) {
    const [exe] = settings.command;
    const sibling = path.join(path.dirname(exe), platform === "win32" ? "rulekit.exe" : "rulekit");
    const cli = path.basename(exe).startsWith("rulekit") ? [exe] : exists(sibling) ? [sibling] : ["rulekit"];
    return { source: "command-setting", cli, server: [...settings.command] };
  }
  if (settings.pythonPath.trim()) return pythonLauncher(settings.pythonPath.trim(), "python-setting");
  if (env.RULEKIT_PYTHON) return pythonLauncher(env.RULEKIT_PYTHON, "env");
  for (const ws of workspaceDirs) {
    for (let dir = path.resolve(ws); ; dir = path.dirname(dir)) {
      const found = venvPythons(dir, platform).find(exists);
      if (found) return pythonLauncher(found, "venv");
      if (path.dirname(dir) === dir) break;
    }
  }
  const exeName = platform === "win32" ? "rulekit.exe" : "rulekit";
  for (const dir of (env.PATH ?? "").split(path.delimiter).filter(Boolean)) {
    const p = path.join(dir, exeName);
    if (exists(p)) return { source: "path", cli: [p], server: [p, "lsp"] };
  }
  return pythonLauncher(platform === "win32" ? "python" : "python3", "default");
}

/** A start failure explained: what went wrong and the fix, in words for a notification. */
export interface StartProblem {
  message: string;
  fix: string;
}

/**
 * Explain a failed preflight / server start (`task` unset) or CLI run (`task`:
 * e.g. "rulekit test") from the spawn error code and stderr.
 */
export function explainStartFailure(launcher: Launcher, errorCode: string | undefined, stderr: string,
  task?: string): StartProblem {
  const exe = task ? launcher.cli[0] : launcher.server[0];
  const where = launcher.python ? `Python \`${launcher.python}\`` : `\`${exe}\``;
  const doing = task ? `cannot run \`${task}\`` : "cannot start the language server";
  if (errorCode === "ENOENT" || errorCode === "EACCES") {
    if (launcher.python) {
      return {
        message: `rulekit: ${doing}: ${where} was not found.`,
        fix: "Install Python 3.11+ and `pip install rulekit-gpu`, or set `rulekit.server.pythonPath` to a Python that has rulekit.",
      };
    }
    return {
      message: `rulekit: ${doing}: ${where} was not found.`,
      fix: "`pip install rulekit-gpu`, or fix `rulekit.server.command` / set `rulekit.server.pythonPath`.",
    };
  }
  if (/No module named ['"]?rulekit['"]?(\s|$)/.test(stderr) || /No module named ['"]rulekit['"]/.test(stderr)) {
    return {
      message: `rulekit: rulekit is not installed in ${where}.`,
      fix: `Run \`${launcher.python ?? "python"} -m pip install rulekit-gpu\`, or set \`rulekit.server.pythonPath\` to a Python that has it.`,
    };
  }
  if (!task && (/No module named ['"]?(rulekit_lsp|pygls|lsprotocol|rulekit\.cli\.lsp)/.test(stderr) || /No such command ['"]?lsp/.test(stderr))) {
    return {
      message: `rulekit: the rulekit in ${where} has no language server (\`rulekit lsp\`).`,
      fix: `Upgrade it: \`${launcher.python ?? "python"} -m pip install -U rulekit-gpu\`.`,
    };
  }
  const lines = stderr.trim().split(/\r?\n/);
  const tail = lines.slice(-3).join(" | ");
  if (task) {
    const first = lines.find((l) => /\berror\b/i.test(l)) ?? tail;
    return {
      message: `rulekit: \`${task}\` failed${first ? `: ${first.trim()}` : "."}`,
      fix: task === "rulekit test" ? "The whole output is in Output > rulekit Tests." : "",
    };
  }
  return {
    message: `rulekit: the language server failed to start${tail ? `: ${tail}` : "."}`,
    fix: "See Output > rulekit Language Server; check `rulekit.server.pythonPath` / `rulekit.server.command`.",
  };
}

/** The check run before starting the server through Python: imports what `rulekit lsp` needs. */
export const PREFLIGHT_CODE = "import rulekit.cli, rulekit.cli.lsp, rulekit_lsp, pygls";

/**
 * Spawn a short check (`python -c "import rulekit.cli.lsp"`, or `rulekit --help`
 * for a console script / custom command).  Resolves to a problem, or undefined
 * when the server should start.
 */
export function preflight(launcher: Launcher, timeoutMs = 20000): Promise<StartProblem | undefined> {
  const argv = launcher.python
    ? [launcher.python, "-c", PREFLIGHT_CODE]
    : launcher.source === "command-setting"
      ? undefined
      : [launcher.server[0], "lsp", "--help"];
  if (!argv) return Promise.resolve(undefined); // a user-given command: let the client report
  return new Promise((resolve) => {
    execFile(argv[0], argv.slice(1), { timeout: timeoutMs }, (err, _stdout, stderr) => {
      if (!err) return resolve(undefined);
      const code = typeof (err as NodeJS.ErrnoException).code === "string" ? String((err as NodeJS.ErrnoException).code) : undefined;
      resolve(explainStartFailure(launcher, code, String(stderr ?? "")));
    });
  });
}
