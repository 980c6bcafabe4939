/**
 * The human channels of a running `pml` (DESIGN §13 "Channels"): its stderr (the client's MCP log
 * or the terminal of `pml serve`) and, when enabled, a desktop notification. Each notice gets a
 * fresh one-time link to the approval page; the agent never sees one.
 */
import type { ApprovalLink, HumanChannel, HumanNotice } from "../permission/human_channel.ts";
import { spawnDetached } from "../spawn_detached.ts";
import { printableLine } from "../sandbox/printable.ts";

/** Runs a program detached (the notification); injectable for tests. */
export type Spawn = (command: string, args: string[]) => void;

/** `pml`'s stderr: what waits, the link, and the terminal commands. */
export function stderrChannel(
  link: () => ApprovalLink,
  tell: (line: string) => void,
): HumanChannel {
  return {
    approvalWaiting(notice) {
      const url = link().forHuman();
      tell(
        notice.reminder
          ? `pml: approval ${notice.workflowId} still waits for you: ${url} ` +
            `(or \`pml approve ${notice.workflowId}\`)\n`
          // The description names what the agent asked for: one line, controls escaped.
          : `pml: approval needed: ${printableLine(notice.description)}\n  open ${url}\n  or run ` +
            `\`pml approve ${notice.workflowId}\` / \`pml deny ${notice.workflowId}\` in a ` +
            `terminal of this workspace (\`pml approvals --open\` for a new link)\n`,
      );
      return Promise.resolve();
    },
  };
}

/**
 * A desktop notification through `notify-send` (`.pml.json` `"notify": "desktop"` or
 * `PML_NOTIFY=desktop`), for new approvals only, not for reminders. Where `notify-send` is missing
 * or fails, nothing else changes: stderr and `pml approvals --open` still reach the human.
 */
export function desktopChannel(
  link: () => ApprovalLink,
  spawn: Spawn = spawnDetached,
): HumanChannel {
  return {
    approvalWaiting(notice: HumanNotice) {
      if (!notice.reminder) {
        spawn("notify-send", [
          "--app-name=PML",
          "PML: approval needed",
          `${notice.description}\n${link().forHuman()}\n(or: pml approve ${notice.workflowId})`,
        ]);
      }
      return Promise.resolve();
    },
  };
}

/** Tells every channel in turn. */
export function allChannels(channels: readonly HumanChannel[]): HumanChannel {
  return {
    async approvalWaiting(notice) {
      for (const c of channels) await c.approvalWaiting(notice);
    },
  };
}
