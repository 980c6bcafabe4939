import { parseArgs } from "node:util";
import { loadConfig, loadConfigAsync, trustNotice } from "../config/config.ts";
import { requireSecureUrl } from "../config/secure_url.ts";
import { errorMessage, isPmlError } from "../errors.ts";
import { createGateway } from "../gateway/create_gateway.ts";
import { PML_VERSION } from "../gateway/mcp_server.ts";
import { serveServerOverStdio, serveStdio } from "../ingress/stdio.ts";
import { createConfigErrorServer } from "../gateway/config_error_server.ts";
import { CLIENTS, parseClients } from "./client_configs.ts";
import type { ImportClient } from "../import/client_files.ts";
import { type CliIo, terminalSafe } from "./io.ts";
import { withStopSignal } from "./stop_signal.ts";

// The modules of every command but `stdio` are imported when that command runs: `pml stdio` is
// started by the agent for each session and waits for none of them (the HTTP server of
// `pml serve`, `pml import`'s TOML parser, …: docs/speed.md, "Cold start").

/** The usage of each command, as `pml <command> --help` prints it. */
const USAGE: Record<string, string> = {
  init: `  pml init [--yes] [--client NAME[,NAME…]] [--api-key KEY] [--cloud-url URL]
           [--transport stdio|http] [--port N] [--workspace DIR]
                     write .pml.json and add PML to each client's config in the workspace
                     (DIR, else PML_WORKSPACE, else the project around the current folder);
                     NAME: ${CLIENTS.join(", ")} or all
                     (default: claude)
`,
  import: `  pml import [--from claude|cursor|vscode|gemini|codex|opencode|qwen|PATH] [--yes]
             [--move | --move-user]
                     bring the MCP servers your agents run (or a server.json) behind PML;
                     --move removes this project's from the client files, --move-user
                     also those of your user-level files (your other projects lose them)
`,
  stdio: `  pml stdio          serve MCP over stdio (what your MCP client runs)
`,
  serve: `  pml serve [--port N]
                     serve MCP over Streamable HTTP on http://127.0.0.1:PORT/mcp
`,
  status: `  pml status [--json]
                     show workspace, config, cloud mode and permissions
`,
  doctor: `  pml doctor [--json]
                     which OS wall confines local tools here and why, its canary's result,
                     what it holds and does not, what to install for a stronger one
`,
  approvals: `  pml approvals [--json]
                     list the approvals waiting for a human in this workspace
  pml approvals --open [--no-browser]
                     a one-time link to the approval page for them (served until none waits)
`,
  approve: `  pml approve ID|--all [--always]
  pml deny ID|--all  decide them (the agent gets the result with pml__continue)
`,
  auth: `  pml auth NAME [--no-browser]
                     sign in to the remote server NAME of private_mcps (OAuth): prints the link,
                     opens a browser where there is one, waits for the sign-in
  pml auth --list [--json] | --logout NAME
                     what is signed in (no token shown); forget (and revoke) a sign-in
`,
  trust: `  pml trust [--yes] | --list
                     show what this workspace's .pml.json widens and trust that exact content
                     (until then PML runs on the built-in defaults plus its deny/ask entries)
  pml untrust        forget it
`,
};
USAGE.deny = USAGE.approve;
USAGE.untrust = USAGE.trust;

const HELP = `pml ${PML_VERSION}: one MCP gateway for your coding agent

Usage:
${USAGE.init}${USAGE.import}${USAGE.stdio}${USAGE.serve}${USAGE.status}${USAGE.doctor}${USAGE.approvals}${USAGE.approve}${USAGE.auth}${USAGE.trust}  pml help | --help  this text (pml <command> --help: that command's)
  pml version

Environment: PML_WORKSPACE (workspace folder), PML_API_KEY (cloud mode), PML_CLOUD_URL, PML_HOME.
`;

/** True when `args` ask for help (`--help` or `-h`) rather than to run the command. */
function asksHelp(args: readonly string[]): boolean {
  return args.some((a) => a === "--help" || a === "-h");
}

/** Runs the CLI; the only place that turns errors into exit codes. */
export async function runCli(argv: string[], given: CliIo, launcher = "pml"): Promise<number> {
  // Every command's terminal output, errors included, shows controls as escapes (issue 37.8).
  const io = terminalSafe(given);
  const [command, ...rest] = argv;
  if (command !== undefined && Object.hasOwn(USAGE, command) && asksHelp(rest)) {
    io.stdout(
      `Usage:\n${
        USAGE[command]
      }\nEnvironment: PML_WORKSPACE, PML_API_KEY, PML_CLOUD_URL, PML_HOME.\n`,
    );
    return 0;
  }
  try {
    switch (command) {
      case "init": {
        const { values } = parseArgs({
          args: rest,
          options: {
            yes: { type: "boolean", short: "y", default: false },
            "api-key": { type: "string" },
            "cloud-url": { type: "string" },
            transport: { type: "string", default: "stdio" },
            port: { type: "string" },
            client: { type: "string", multiple: true },
            workspace: { type: "string" },
          },
        });
        const clients = parseClients(values.client);
        if (values.transport !== "stdio" && values.transport !== "http") {
          throw new TypeError(`--transport must be "stdio" or "http", not "${values.transport}"`);
        }
        const port = values.port === undefined ? undefined : Number(values.port);
        if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536)) {
          throw new TypeError(`--port must be a port number, not "${values.port}"`);
        }
        if (values["cloud-url"] !== undefined && !URL.canParse(values["cloud-url"])) {
          throw new TypeError(`--cloud-url must be a URL, not "${values["cloud-url"]}"`);
        }
        if (values["cloud-url"] !== undefined) requireSecureUrl(values["cloud-url"], "--cloud-url");
        if (values.workspace !== undefined && values.workspace.trim() === "") {
          throw new TypeError(`--workspace must name a folder, not "${values.workspace}"`);
        }
        const { runInit } = await import("./init.ts");
        return await runInit({
          yes: values.yes,
          apiKey: values["api-key"],
          cloudUrl: values["cloud-url"],
          transport: values.transport,
          port,
          launcher,
          clients,
          workspace: values.workspace,
        }, io);
      }
      case "import": {
        const { values, positionals } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: {
            from: { type: "string" },
            yes: { type: "boolean", short: "y", default: false },
            move: { type: "boolean", default: false },
            "move-user": { type: "boolean", default: false },
          },
        });
        if (positionals.length > 1 || (positionals.length && values.from !== undefined)) {
          throw new TypeError(`pml import takes one source: --from CLIENT, --from PATH or PATH`);
        }
        const [{ runImport }, { IMPORT_CLIENTS }] = await Promise.all([
          import("./import.ts"),
          import("../import/client_files.ts"),
        ]);
        const source = values.from ?? positionals[0];
        const from = source === undefined
          ? undefined
          : (IMPORT_CLIENTS as readonly string[]).includes(source)
          ? { client: source as ImportClient }
          : { path: source };
        return await runImport({
          from,
          yes: values.yes,
          move: values.move || values["move-user"],
          moveUser: values["move-user"],
        }, io);
      }
      case "stdio": {
        parseArgs({ args: rest, options: {} });
        let config;
        try {
          config = await loadConfigAsync({ env: io.env, cwd: io.cwd, home: io.home });
        } catch (err) {
          if (!isPmlError(err, "CONFIG_INVALID")) throw err;
          // Answer the client with the error instead of exiting before `initialize`: the user then
          // sees it in their agent, not "failed to connect".
          io.stderr(`pml: ${err.message}\n`);
          await serveServerOverStdio(createConfigErrorServer(err.message), () => Promise.resolve());
          return 1;
        }
        if (config.workspaceWarning) io.stderr(config.workspaceWarning + "\n");
        const notice = trustNotice(config);
        if (notice) io.stderr(`pml: ${notice}\n`);
        await serveStdio(createGateway(config));
        return 0;
      }
      case "serve": {
        const { values } = parseArgs({ args: rest, options: { port: { type: "string" } } });
        const port = values.port === undefined ? undefined : Number(values.port);
        if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port < 65536)) {
          throw new TypeError(`--port must be a port number, not "${values.port}"`);
        }
        const config = await loadConfigAsync({ env: io.env, cwd: io.cwd, home: io.home });
        if (config.workspaceWarning) io.stderr(config.workspaceWarning + "\n");
        const notice = trustNotice(config);
        if (notice) io.stderr(`pml: ${notice}\n`);
        const { runServe } = await import("./serve.ts");
        return await runServe(config, io, { port });
      }
      case "status": {
        const { values } = parseArgs({
          args: rest,
          options: { json: { type: "boolean", default: false } },
        });
        const { runStatus } = await import("./status.ts");
        return runStatus(io, { json: values.json });
      }
      case "doctor": {
        const { values } = parseArgs({
          args: rest,
          options: { json: { type: "boolean", default: false } },
        });
        const { runDoctor } = await import("./doctor.ts");
        return runDoctor(io, { json: values.json });
      }
      case "approvals": {
        const { values } = parseArgs({
          args: rest,
          options: {
            json: { type: "boolean", default: false },
            open: { type: "boolean", default: false },
            "no-browser": { type: "boolean", default: false },
          },
        });
        const config = loadConfig({ env: io.env, cwd: io.cwd, home: io.home });
        if (!values.open) {
          const { runApprovals } = await import("./approvals.ts");
          return await runApprovals(config, io, values.json);
        }
        if (values.json) throw new TypeError("--open and --json do not go together");
        const { runApprovalsOpen } = await import("./approvals_open.ts");
        return await withStopSignal((signal) =>
          runApprovalsOpen(config, io, { browser: !values["no-browser"], signal })
        );
      }
      case "approve":
      case "deny": {
        const { values, positionals } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: {
            all: { type: "boolean", default: false },
            ...(command === "approve" ? { always: { type: "boolean", default: false } } : {}),
          },
        });
        const config = loadConfig({ env: io.env, cwd: io.cwd, home: io.home });
        const decision = command === "deny" ? "no" : values.always ? "always" : "yes";
        const { runDecide } = await import("./approvals.ts");
        return await runDecide(config, io, { ids: positionals, all: values.all, decision });
      }
      case "auth": {
        const { values, positionals } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: {
            list: { type: "boolean", default: false },
            json: { type: "boolean", default: false },
            logout: { type: "string" },
            "no-browser": { type: "boolean", default: false },
          },
        });
        const config = loadConfig({ env: io.env, cwd: io.cwd, home: io.home });
        const { runAuth, runAuthList, runAuthLogout } = await import("./auth.ts");
        if (values.list) return await runAuthList(config, io, values.json);
        if (values.logout !== undefined) return await runAuthLogout(config, io, values.logout);
        if (positionals.length !== 1) throw new TypeError("pml auth needs the name of one server");
        return await withStopSignal((signal) =>
          runAuth(config, io, positionals[0], { browser: !values["no-browser"], signal })
        );
      }
      case "trust": {
        const { values } = parseArgs({
          args: rest,
          options: {
            yes: { type: "boolean", short: "y", default: false },
            list: { type: "boolean", default: false },
          },
        });
        const { runTrust, runTrustList } = await import("./trust.ts");
        return values.list ? runTrustList(io) : await runTrust(io, { yes: values.yes });
      }
      case "untrust": {
        parseArgs({ args: rest, options: {} });
        const { runUntrust } = await import("./trust.ts");
        return await runUntrust(io);
      }
      case "version":
      case "--version":
        io.stdout(`pml ${PML_VERSION}\n`);
        return 0;
      case undefined:
      case "help":
      case "--help":
      case "-h":
        io.stdout(HELP);
        return 0;
      default:
        io.stderr(`pml: unknown command "${command}"\n\n${HELP}`);
        return 2;
    }
  } catch (err) {
    if (isPmlError(err)) {
      io.stderr(`pml: ${err.message}\n`);
      return 1;
    }
    if (err instanceof TypeError && (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      io.stderr(`pml: ${err.message}\n\n${HELP}`);
      return 2;
    }
    if (err instanceof TypeError) {
      io.stderr(`pml: ${err.message}\n`);
      return 2;
    }
    io.stderr(`pml: unexpected error: ${errorMessage(err)}\n${(err as Error)?.stack ?? ""}\n`);
    return 1;
  }
}
