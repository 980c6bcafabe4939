/**
 * `pml-server keys create [--label L] | list [--json] | revoke <id>`.
 *
 * @module
 */
import { createApiKey } from "../auth/keys.ts";
import type { Store } from "../store/store.ts";
import type { CliIo } from "./io.ts";
import { UsageError } from "./usage.ts";

/** Runs a `keys` subcommand against `store`; resolves with the exit code. */
export async function keysCommand(
  store: Store,
  args: readonly string[],
  flags: { label?: string; json?: boolean },
  io: CliIo,
): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case "create": {
      if (rest.length) throw new UsageError(`"keys create" takes no arguments, got "${rest[0]}"`);
      const { key, record } = await createApiKey(store, { label: flags.label });
      io.stdout(key);
      io.stderr(
        `Created API key ${record.id} (${record.prefix}…). It is shown once: store it now.`,
      );
      return 0;
    }
    case "list": {
      const keys = await store.listApiKeys();
      if (flags.json) {
        io.stdout(JSON.stringify(keys.map(({ keyHash: _hash, ...visible }) => visible), null, 2));
        return 0;
      }
      const rows = [["ID", "PREFIX", "CREATED", "REVOKED", "LABEL"]].concat(
        keys.map((k) => [k.id, `${k.prefix}…`, k.createdAt, k.revokedAt ?? "-", k.label ?? ""]),
      );
      const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
      for (const row of rows) {
        io.stdout(row.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd());
      }
      return 0;
    }
    case "revoke": {
      if (rest.length !== 1) throw new UsageError(`"keys revoke" needs exactly one key id`);
      if (!(await store.revokeApiKey(rest[0], new Date().toISOString()))) {
        io.stderr(`pml-server: no API key with id "${rest[0]}" (see \`pml-server keys list\`)`);
        return 1;
      }
      io.stdout(`Revoked ${rest[0]}`);
      return 0;
    }
    default:
      throw new UsageError(`Unknown keys command "${sub ?? ""}": expected create, list or revoke`);
  }
}
