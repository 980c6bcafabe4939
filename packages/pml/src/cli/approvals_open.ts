import type { Config } from "../config/config.ts";
import { ApprovalStore } from "../permission/approval_store.ts";
import { ApprovalPage } from "../gateway/approval_page.ts";
import { approvalWhy } from "../gateway/approval_card.ts";
import { decideAsHuman, humanDecisionDeps } from "../permission/human_decision.ts";
import { spawnDetached } from "../spawn_detached.ts";
import type { CliIo } from "./io.ts";

/** How often `--open` looks whether anything still waits. */
const POLL_MS = 500;

/** Options of {@link runApprovalsOpen}; the defaults are the real ones. */
export interface OpenOptions {
  /** Try to open the link in a browser (`xdg-open`, `open`); `--no-browser` turns it off. */
  readonly browser: boolean;
  /** Starts the browser opener, detached (injectable for tests). */
  readonly openUrl?: (url: string) => void;
  /** Stops serving when aborted (the CLI aborts on SIGINT/SIGTERM). */
  readonly signal?: AbortSignal;
}

/**
 * `pml approvals --open`: a fresh one-time link to an approval page for this workspace's pending
 * approvals, served by this command (so it works when no `pml` runs any more, as after a one-shot
 * client such as the Inspector CLI or mcporter). The link is printed, and opened in a browser
 * where one can be started; the page is served until no approval waits any more, or Ctrl-C.
 */
export async function runApprovalsOpen(
  config: Config,
  io: CliIo,
  opts: OpenOptions,
): Promise<number> {
  const store = new ApprovalStore(config.workspace, config.pmlHome);
  const waiting = async () => (await store.list()).filter((a) => !a.decided).length;
  const count = await waiting();
  if (count === 0) {
    io.stdout(`No pending approval in ${config.workspace}\n`);
    return 0;
  }
  const deps = { ...humanDecisionDeps(config), store };
  const page = new ApprovalPage(store, config.workspace, {
    why: approvalWhy(() => config.permissions, () => config.permissionsFromFile),
    warn: (line) => io.stderr(line + "\n"),
    decide: (id, decision) => decideAsHuman(deps, id, decision, "page"),
  });
  try {
    const url = page.link().forHuman();
    io.stdout(
      `${count} approval(s) wait in ${config.workspace}:\n  ${url}\n` +
        `(a one-time link; this command serves the page until no approval waits, or Ctrl-C)\n`,
    );
    if (opts.browser) (opts.openUrl ?? openInBrowser)(url);
    const stop = opts.signal;
    while (!stop?.aborted && await waiting() > 0) await sleep(POLL_MS, stop);
    // Let the page show the last decision before it goes away.
    if (!stop?.aborted) await sleep(2 * POLL_MS, stop);
    io.stdout(stop?.aborted ? "Stopped.\n" : "No approval waits any more.\n");
    return 0;
  } finally {
    await page.close();
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** `xdg-open URL` (Linux) or `open URL` (macOS); nothing when neither is there. */
function openInBrowser(url: string): void {
  spawnDetached(Deno.build.os === "darwin" ? "open" : "xdg-open", [url]);
}
