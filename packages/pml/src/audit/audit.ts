import { join } from "node:path";

/** Kinds of audit events (DESIGN §4 `.pml/audit.log`). */
export type AuditEvent =
  | "permission_denied"
  | "path_blocked"
  | "control_file_blocked"
  | "protected_file_blocked"
  | "elicitation_unanswered"
  | "approval_decided"
  | "sandbox_violation"
  | "integrity"
  | "import_blocked"
  | "sampling"
  | "sign_in"
  | "resource_read"
  | "prompt_get";

/** Appends JSON lines to `.pml/audit.log`. Never throws: auditing must not break a call. */
export interface AuditLog {
  write(event: AuditEvent, fields: Record<string, unknown>): Promise<void>;
}

/**
 * Audit log in `<workspace>/.pml/audit.log`. `now` is injectable for tests.
 *
 * Each line is appended synchronously, the folder made only when the file cannot be opened for
 * want of it: ~7 µs a line, where the asynchronous `mkdir` and append (four trips through Deno's
 * thread pool) cost ~90 µs of CPU, paid on every audited `resources/read` and `prompts/get`
 * (docs/speed.md, rows surface-read and surface-prompt). The lines keep the order of the calls;
 * the file is opened anew for each, so a log removed or truncated meanwhile is written again.
 */
export function createAuditLog(
  workspace: string,
  opts: { now?: () => Date; onError?: (err: unknown) => void } = {},
): AuditLog {
  const dir = join(workspace, ".pml");
  const path = join(dir, "audit.log");
  const now = opts.now ?? (() => new Date());
  const append = (line: string) => Deno.writeTextFileSync(path, line, { append: true });
  return {
    write(event, fields) {
      const line = JSON.stringify({ ts: now().toISOString(), event, ...fields }) + "\n";
      try {
        try {
          append(line);
        } catch (err) {
          if (!(err instanceof Deno.errors.NotFound)) throw err;
          Deno.mkdirSync(dir, { recursive: true });
          append(line);
        }
      } catch (err) {
        (opts.onError ?? ((e) => console.error(`pml: cannot write audit log: ${e}`)))(err);
      }
      return Promise.resolve();
    },
  };
}
