/**
 * What the approval page shows of one pending approval (docs/approvals.md "The approval page"):
 * the tool, its path, command, content or diff, where it runs, why it is asked, the arguments, the
 * expiry, and the three answers. Everything is shown in full (long content scrolls inside its
 * box, long lines wrap), and what a person cannot see in plain text is made visible: zero-width
 * and direction characters become `⟦U+200B⟧` marks, trailing spaces and tabs `·` and `→`.
 */
import type { Permissions } from "../permission/patterns.ts";
import { matchesPattern } from "../permission/patterns.ts";
import type { StoredApproval, StoredDecision } from "../permission/approval_store.ts";
import { shownJson } from "../permission/shown_json.ts";
import { serverToolIn } from "./server_tool.ts";

/** A pending approval with its decision, as the store lists it. */
export type ListedApproval = StoredApproval & { decided?: StoredDecision };

/**
 * Why `a` is asked, in words for the page: the rule of `.pml.json` that asks it, or PML's built-in
 * defaults when the permissions do not come from `.pml.json`. `fromFile` says which applies now.
 */
export function approvalWhy(
  permissions: () => Permissions,
  fromFile: () => boolean,
): (a: StoredApproval) => string {
  return (a) => {
    const tool = a.context.tool;
    const source = fromFile()
      ? ".pml.json"
      : "PML's built-in defaults (no permissions of .pml.json apply)";
    const rule = typeof tool === "string" && a.type === "tool_permission"
      ? permissions().ask.find((p) => matchesPattern(p, tool))
      : undefined;
    const asked = rule
      ? `It matches "${rule}" in the "ask" list of ${source}.`
      : a.type === "tool_permission"
      ? `No pattern of ${source} allows it (unmatched tools are asked).`
      : "";
    const who = a.mode === "human" ? " The agent cannot approve it: you decide." : "";
    const server = serverToolIn(a.context);
    const whose = server && !server.read_only && a.mode === "human"
      ? ` It is a tool of the MCP server "${server.name}", whose pinned definition does not say ` +
        `it only reads.`
      : "";
    return asked + who + whose;
  };
}

/** One pending approval: what, with what, where, why, and the three answers. */
export function approvalCard(a: ListedApproval, csrf: string, why: string): string {
  const tool = String(a.context.tool ?? a.type);
  const args = (a.context.arguments ?? {}) as Record<string, unknown>;
  const where = a.context.routing === "server"
    ? "on the PML server"
    : `on this machine, in the workspace sandbox`;
  const details: string[] = [];
  if (typeof args.path === "string") details.push(field("Path", "path", shown(args.path)));
  for (const key of ["source", "destination"]) {
    if (typeof args[key] === "string") details.push(field(key, key, shown(args[key] as string)));
  }
  if (typeof args.command === "string") {
    const argv = Array.isArray(args.args) ? " " + (args.args as unknown[]).join(" ") : "";
    details.push(field("Command", "command", `<pre>${shown(args.command + argv)}</pre>`));
  }
  if (Array.isArray(args.edits)) details.push(field("Diff", "diff", diff(args.edits)));
  else if (typeof args.content === "string") {
    details.push(
      field(
        `Content (${args.content.length.toLocaleString("en")} characters, in full)`,
        "content",
        `<pre>${shown(args.content)}</pre>`,
      ),
    );
  }
  const answer = a.decided
    ? `<p data-field="decided">Decided: <strong>${
      esc(a.decided.decision)
    }</strong>; the agent gets the result with pml:continue.</p>`
    : `<form method="post" action="/decide">
<input type="hidden" name="id" value="${
      esc(a.id)
    }"><input type="hidden" name="csrf" value="${csrf}">
<button name="decision" value="yes">Yes</button><button name="decision" value="always">Always</button><button name="decision" value="no">No</button>
</form>`;
  return `<section class="approval" id="a-${esc(a.id)}" data-id="${esc(a.id)}">
<h2 data-field="tool">${esc(tool)}</h2>
<dl>
<dt>Approval id</dt><dd data-field="id"><code>${esc(a.id)}</code></dd>
${details.join("\n")}
${field("Where it runs", "where", esc(where))}
${field("Why it is asked", "why", shown(why ? `${a.description} ${why}` : a.description))}
${
    a.forHuman
      ? field("What changed", "difference", `<pre>${shown(a.forHuman.description)}</pre>`)
      : ""
  }
${field("Arguments", "arguments", `<pre>${shown(shownJson(args))}</pre>`)}
${field("Expires", "expires", esc(new Date(a.expiresAt).toISOString()))}
</dl>
${answer}
</section>`;
}

/** The page's own style: boxes scroll, lines wrap, marks stand out. */
export const CARD_STYLE =
  `.approval{border:1px solid #bbb;border-radius:6px;padding:0.8rem 1rem;margin:1rem 0}
h2{font-size:1.1rem;margin:0 0 .5rem}
dt{font-weight:600}dd{margin:0 0 .5rem 1rem;overflow-wrap:anywhere}
pre{background:#f4f4f4;padding:.5rem;overflow:auto;max-height:24rem;margin:0;white-space:pre-wrap;overflow-wrap:anywhere}
.del{color:#a00}.add{color:#060}
mark.hidden{background:#fd7;color:#600;border-radius:3px;font-size:.85em}
mark.ws{background:#fd7;color:#600}
button{font-size:1rem;margin-right:.5rem;padding:.3rem 1rem}`;

function field(label: string, name: string, html: string): string {
  return `<dt>${esc(label)}</dt><dd data-field="${name}">${html}</dd>`;
}

/** `filesystem:edit_file` edits as a diff: removed lines, then added lines, per edit. */
function diff(edits: unknown[]): string {
  const lines: string[] = [];
  for (const e of edits) {
    const { oldText, newText } = (e ?? {}) as { oldText?: unknown; newText?: unknown };
    for (const l of String(oldText ?? "").split("\n")) {
      lines.push(`<span class="del">- ${shown(l)}</span>`);
    }
    for (const l of String(newText ?? "").split("\n")) {
      lines.push(`<span class="add">+ ${shown(l)}</span>`);
    }
  }
  return `<pre>${lines.join("\n")}</pre>`;
}

/**
 * Characters a person cannot see in plain text: zero-width spaces and joiners, the soft hyphen,
 * direction marks, embeddings, overrides and isolates, the word joiner and invisible operators,
 * the byte-order mark, and other format characters (`\p{Cf}`), plus controls other than newline
 * and tab.
 */
// deno-lint-ignore no-control-regex -- controls are exactly what must be made visible
const HIDDEN = /[\p{Cf}\u0000-\u0008\u000B-\u001F\u007F-\u009F\u2028\u2029]/gu;

/**
 * HTML for `text` with what is invisible made visible: each hidden character becomes a mark
 * naming its code point, and spaces or tabs at the end of a line become `·` and `→`.
 */
export function shown(text: string): string {
  return text.split("\n").map((line) => {
    const trail = /[ \t]+$/.exec(line)?.[0] ?? "";
    const body = line.slice(0, line.length - trail.length);
    const marks = [...trail].map((c) => c === " " ? "·" : "→").join("");
    const tail = trail
      ? `<mark class="ws" title="${trail.length} trailing space(s) or tab(s)">${marks}</mark>`
      : "";
    return esc(body).replace(HIDDEN, (c) => {
      const cp = `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
      return `<mark class="hidden" title="invisible character ${cp}">⟦${cp}⟧</mark>`;
    }) + tail;
  }).join("\n");
}

export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
