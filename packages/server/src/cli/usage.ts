/** Usage text and the error for bad command lines (exit code 2). */

/** A command line that cannot be run; the CLI prints it with the usage and exits 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** `pml-server --help`. */
export const USAGE = `Usage: pml-server <command> [options]

Commands:
  serve [--port N] [--hostname H] [--data-dir DIR]   run the registry/API server
  keys create [--label TEXT]                          create an API key (printed once, first line)
  keys list [--json]                                  list keys: id, prefix, created, revoked
  keys revoke <id>                                    revoke a key
  registry sync                                       re-seed the registry from registry/
  publish <server.json>                               a registry entry from an MCP Registry server.json

Options (every command):
  --data-dir DIR       SQLite folder (env PML_DATA_DIR, default ~/.pml-server)
  --registry-dir DIR   registry folder (env PML_REGISTRY_DIR, default the repository's registry/)
Environment:
  PORT                 port of serve (default 3003; 0 picks a free one)
  PML_DATABASE_URL     postgres://… to use PostgreSQL instead of SQLite`;
