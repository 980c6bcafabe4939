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

/** Audit log in `<workspace>/.pml/audit.log`. `now` is injectable for tests. */
export function createAuditLog(
  workspace: string,
  opts: { now?: () => Date; onError?: (err: unknown) => void } = {},
): AuditLog {
  const dir = join(workspace, ".pml");
  const path = join(dir, "audit.log");
  const now = opts.now ?? (() => new Date());
  let chain = Promise.resolve();
  return {
    write(event, fields) {
      const line = JSON.stringify({ ts: now().toISOString(), event, ...fields }) + "\n";
      chain = chain.then(async () => {
        try {
          await Deno.mkdir(dir, { recursive: true });
          await Deno.writeTextFile(path, line, { append: true });
        } catch (err) {
          (opts.onError ?? ((e) => console.error(`pml: cannot write audit log: ${e}`)))(err);
        }
      });
      return chain;
    },
  };
}
