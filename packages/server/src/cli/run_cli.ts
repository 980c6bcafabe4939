/**
 * The CLI runner: argv → command → exit code. The only place that turns errors into exit codes
 * (0 ok, 1 failure, 2 usage).
 *
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadRoutingTable } from "../registry/routing_table.ts";
import { seedRegistry } from "../registry/seed.ts";
import { openStore } from "../store/open_store.ts";
import { resolveConfig } from "./config.ts";
import { type CliIo, processIo } from "./io.ts";
import { keysCommand } from "./keys.ts";
import { publishCommand } from "./publish.ts";
import { serveCommand } from "./serve.ts";
import { USAGE, UsageError } from "./usage.ts";

/** Runs `pml-server <args>`; resolves with the process exit code. */
export async function runCli(args: readonly string[], io: CliIo = processIo()): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      allowPositionals: true,
      strict: true,
      options: {
        port: { type: "string" },
        hostname: { type: "string" },
        "data-dir": { type: "string" },
        "registry-dir": { type: "string" },
        label: { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
    const [command, ...rest] = positionals;
    if (values.help || command === "help" || command === undefined) {
      (command === undefined && !values.help ? io.stderr : io.stdout)(USAGE);
      return command === undefined && !values.help ? 2 : 0;
    }
    const config = resolveConfig(values, io.env, io.cwd);
    switch (command) {
      case "serve":
        if (rest.length) throw new UsageError(`"serve" takes no arguments, got "${rest[0]}"`);
        return await serveCommand(config, io);
      case "keys": {
        const store = await openStore(config);
        try {
          return await keysCommand(store, rest, values, io);
        } finally {
          await store.close();
        }
      }
      case "registry": {
        if (rest.join(" ") !== "sync") {
          throw new UsageError(
            `Unknown registry command "${rest.join(" ")}": expected "registry sync"`,
          );
        }
        const store = await openStore(config);
        try {
          const routing = await loadRoutingTable(join(config.registryDir, "routing.json"));
          const result = await seedRegistry(store, { registryDir: config.registryDir, routing });
          io.stdout(
            `registry sync: ${result.added.length} added, ${result.updated.length} updated, ` +
              `${result.removed.length} removed, ${result.unchanged} unchanged`,
          );
          return 0;
        } finally {
          await store.close();
        }
      }
      case "publish":
        return await publishCommand(config, rest, io);
      default:
        throw new UsageError(`Unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof UsageError || isParseArgsError(error)) {
      io.stderr(`pml-server: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    io.stderr(`pml-server: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

function isParseArgsError(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return typeof code === "string" && code.startsWith("ERR_PARSE_ARGS");
}
