/**
 * The diagnosis panel of "Attribute job folder…": `rulekit attribute DIR
 * --format json` output (the JSON contract of rulekit/cli/attribute.py) turned
 * into one self-contained HTML page.
 *
 * Pure: data in, HTML string out; every value from the result is escaped, and
 * the page runs no scripts (its Content-Security-Policy forbids them).
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export function escapeHtml(s: unknown): string {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

const OUTCOME_COLOR: Record<string, string> = {
  hardware: "#e5534b", network: "#c678dd", application: "#d4a72c", infrastructure: "#39c5cf",
  cancelled: "#539bf5", timeout: "#539bf5", success: "#57ab5a", unknown: "#909dab",
};

function evidenceRows(evidence: Json[]): string {
  if (!Array.isArray(evidence) || evidence.length === 0) return "<p class=\"muted\">no evidence lines</p>";
  const rows = evidence.map((e) => `<tr><td><code>${escapeHtml(e.source)}:${escapeHtml(e.line_num)}</code></td>`
    + `<td>${escapeHtml(e.node)}</td><td><code>${escapeHtml(e.symptom)}</code></td><td>${escapeHtml(e.rule)}</td>`
    + `<td class="datum"><code>${escapeHtml(e.datum)}</code></td></tr>`);
  return `<table><thead><tr><th>line</th><th>node</th><th>symptom</th><th>rule</th><th>text</th></tr></thead>`
    + `<tbody>${rows.join("")}</tbody></table>`;
}

function nodeList(title: string, nodes: Json[]): string {
  if (!Array.isArray(nodes) || nodes.length === 0) return "";
  const items = nodes.map((n) => `<li><b>${escapeHtml(n.node)}</b>`
    + (n.action ? ` <span class="muted">(${escapeHtml(n.action)}, ${escapeHtml(n.confidence ?? "certain")})</span>` : "")
    + `: ${(n.symptoms ?? []).map((s: string) => `<code>${escapeHtml(s)}</code>`).join(", ")}</li>`);
  return `<h2>${escapeHtml(title)}</h2><ul>${items.join("")}</ul>`;
}

/** The HTML of one attribution result (or of the error the CLI reported). */
export function renderAttributionHtml(result: Json, jobDir: string): string {
  const head = `<!DOCTYPE html><html><head><meta charset="utf-8">`
    + `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline';">`
    + `<title>${escapeHtml(jobDir)}</title><style>
body{font-family:var(--vscode-font-family,sans-serif);padding:0 1em;line-height:1.45}
.outcome{display:inline-block;padding:.15em .6em;border-radius:4px;color:#fff;font-weight:bold;text-transform:uppercase}
.muted{opacity:.7} table{border-collapse:collapse;width:100%} td,th{border-bottom:1px solid #8884;padding:.25em .5em;text-align:left;vertical-align:top}
td.datum code{white-space:pre-wrap;word-break:break-all} pre{white-space:pre-wrap}
</style></head><body>`;
  if (!result || typeof result !== "object" || "error" in result) {
    const msg = result && typeof result === "object" ? result.error : "no result";
    return `${head}<h1>Attribution failed</h1><p><code>${escapeHtml(jobDir)}</code></p><pre>${escapeHtml(msg)}</pre></body></html>`;
  }
  const outcome = String(result.outcome ?? "unknown");
  const color = OUTCOME_COLOR[outcome] ?? OUTCOME_COLOR.unknown;
  const parts: string[] = [head];
  parts.push(`<h1>Job ${escapeHtml(result.job_id)}</h1>`);
  parts.push(`<p><span class="outcome" style="background:${color}">${escapeHtml(outcome)}</span> `
    + `/ ${escapeHtml(result.sub_domain)}${result.ambiguous ? ' <b class="muted">(ambiguous)</b>' : ""}`
    + `${result.confidence ? ` <span class="muted">confidence ${escapeHtml(result.confidence)}</span>` : ""}</p>`);
  if (Array.isArray(result.alternatives) && result.alternatives.length) {
    parts.push(`<p class="muted">Alternatives: ${result.alternatives.map((a: Json) =>
      `${escapeHtml(a.outcome)}/${escapeHtml(a.sub_domain)} (<code>${escapeHtml(a.symptom)}</code>)`).join(", ")}</p>`);
  }
  const root = result.root_cause;
  if (root) {
    parts.push(`<h2>Root cause</h2><p><code>${escapeHtml(root.symptom)}</code> on <b>${escapeHtml(root.node)}</b>`
      + ` <span class="muted">(rule ${escapeHtml(root.rule)})</span></p>`);
    parts.push(evidenceRows(root.evidence));
  } else {
    parts.push(`<h2>Root cause</h2><p class="muted">none: no symptom survived refinement</p>`);
  }
  parts.push(nodeList("Bad nodes", result.bad_nodes));
  parts.push(nodeList("Affected nodes (not at fault)", result.affected_nodes));
  parts.push(nodeList("Interesting nodes", result.interesting_nodes));
  if (Array.isArray(result.symptoms) && result.symptoms.length) {
    parts.push(`<h2>Symptoms</h2><p>${result.symptoms.map((s: string) => `<code>${escapeHtml(s)}</code>`).join(" ")}</p>`);
  }
  if (Array.isArray(result.evidence) && result.evidence.length) {
    parts.push(`<h2>Evidence</h2>${evidenceRows(result.evidence)}`);
  }
  if (result.collectors && Object.keys(result.collectors).length) {
    parts.push(`<h2>Collectors</h2><pre>${escapeHtml(JSON.stringify(result.collectors, null, 2))}</pre>`);
  }
  if (Array.isArray(result.notes) && result.notes.length) {
    parts.push(`<h2>Notes</h2><ul>${result.notes.map((n: Json) => `<li>${escapeHtml(n.code ?? "")} ${escapeHtml(n.message ?? JSON.stringify(n))}</li>`).join("")}</ul>`);
  }
  parts.push(`<p class="muted">${escapeHtml(jobDir)}</p></body></html>`);
  return parts.join("\n");
}
