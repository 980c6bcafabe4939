/**
 * Remote MCP servers of `private_mcps` (`type: "http"`, from `pml import` of a `url` entry or a
 * `server.json` remote), proxied by `pml` itself over Streamable HTTP or SSE: the PML server never
 * sees them. Pinned like registry http MCPs (DESIGN §12): the metadata (`proxyTo`, `transport`,
 * header templates, `envRequired`) in `.pml/mcp.lock` (the user's own entry: a change is recorded,
 * not asked), and each tool definition the server lists, read on first connection; a changed
 * definition is an `integrity` approval and is not listed until approved.
 *
 * @module
 */
import { printable } from "../../sandbox/printable.ts";
import type { CallToolResult, UrlElicitationRequiredError } from "../../sdk/types.ts";
import { redactSecrets } from "../../redact_secrets.ts";
import { asksToOpenUrl, bareMessage, NOT_URL_ELICITATIONS, openUrlError } from "../call_errors.ts";
import type { PrivateMcp } from "../../config/schema.ts";
import { errorMessage, isPmlError } from "../../errors.ts";
import { missingEnvResult } from "../missing_env.ts";
import type { McpPins, MetadataPin, ToolDefinition } from "../../registry/mcp_pins.ts";
import {
  type CallContext,
  errorResult,
  type Target,
  type ToolCall,
  type ToolInfo,
  type Upstreams,
} from "../target.ts";
import {
  guardedCall,
  pinnedDefinitions,
  serverLockName,
  ToolsChanged,
} from "../upstream/tool_guard.ts";
import { listedTools, ServerPins } from "../upstream/server_pins.ts";
import { upstreamCallOptions, type UpstreamSession } from "../upstream/upstream_session.ts";
import type { RemoteSignIn } from "../../oauth/remote_sign_in.ts";
import { connectRemote, type RemoteDef } from "./remote_session.ts";
import type { UpstreamHub } from "../upstream/upstream_hub.ts";

/** What a {@link RemoteTarget} needs. */
export interface RemoteTargetDeps {
  readonly mcps: Readonly<Record<string, PrivateMcp>>;
  readonly env: Readonly<Record<string, string>>;
  readonly pins?: McpPins;
  readonly fetch?: typeof fetch;
  /** Connect and per-call timeout (default 60 s). */
  readonly timeoutMs?: number;
  /** Where the servers' notifications outside a call go; the workspace as their root. */
  readonly hub?: UpstreamHub;
  /** OAuth sign-in of servers without an `Authorization` header of their own (`oauth/`). */
  readonly signIn?: RemoteSignIn;
}

/** The remote servers of `private_mcps`, by namespace. */
export function remoteDefs(mcps: Readonly<Record<string, PrivateMcp>>): Map<string, RemoteDef> {
  const out = new Map<string, RemoteDef>();
  for (const [server, m] of Object.entries(mcps)) {
    if (m.type !== "http" || !m.proxyTo) continue;
    out.set(server, {
      server,
      description: m.description ?? "",
      proxyTo: m.proxyTo,
      transport: m.transport ?? "streamable-http",
      headers: m.headers ?? {},
      envRequired: m.envRequired ?? [],
    });
  }
  return out;
}

/** What `.pml/mcp.lock` pins of a remote server's metadata (the user's own entry). */
function metadataPin(def: RemoteDef): MetadataPin {
  return {
    fqdn: serverLockName(def.server),
    type: "http",
    routing: "client",
    proxyTo: def.proxyTo,
    envRequired: [...def.envRequired],
    document: {
      type: "http",
      description: def.description,
      proxyTo: def.proxyTo,
      transport: def.transport,
      headers: def.headers,
      envRequired: def.envRequired,
    },
  };
}

/** See the module documentation. */
export class RemoteTarget implements Target {
  readonly name = "remote";
  readonly upstreams: Upstreams;
  readonly #d: RemoteTargetDeps;
  readonly #defs: Map<string, RemoteDef>;
  readonly #sessions = new Map<string, Promise<UpstreamSession>>();
  readonly #pins: ServerPins;

  constructor(deps: RemoteTargetDeps) {
    this.#d = deps;
    this.#defs = remoteDefs(deps.mcps);
    this.#pins = new ServerPins(deps.pins);
    this.upstreams = {
      origin: "remote",
      servers: (ns) => Promise.resolve([...this.#defs.keys()].filter((s) => !ns || ns.has(s))),
      session: async (server) => {
        const def = this.#defs.get(server);
        if (!def || this.#missing(def).length) return undefined;
        // Not reached, or waiting for its user to sign in: nothing of it to show now.
        return await this.#guarded(def).catch(() => undefined);
      },
    };
  }

  async listTools(namespaces?: ReadonlySet<string>): Promise<ToolInfo[]> {
    const out: ToolInfo[] = [];
    for (const def of this.#defs.values()) {
      if (namespaces && !namespaces.has(def.server)) continue;
      let defs: readonly ToolDefinition[] | undefined;
      try {
        defs = await this.#d.pins?.pinnedDefinitions(serverLockName(def.server));
        // Not pinned yet: read from the server now (nothing runs here; the URL is the user's).
        if (!defs && !this.#missing(def).length) defs = await this.#readTools(def);
      } catch (err) {
        // Waiting for its user: the link went to the human; its tools are listed once signed in.
        if (!isPmlError(err, "SIGN_IN_REQUIRED")) {
          const why = await this.#d.signIn?.scrub(def.server, def.proxyTo, errorMessage(err)) ??
            errorMessage(err);
          console.error(printable(`pml: cannot list the tools of "${def.server}": ${why}`));
        }
      }
      out.push(...listedTools(def.server, defs ?? [], () => "client"));
    }
    return out;
  }

  async provides(toolId: string): Promise<boolean> {
    const colon = toolId.indexOf(":");
    const def = this.#defs.get(toolId.slice(0, colon));
    if (!def) return false;
    const pinned = await this.#d.pins?.pinnedDefinitions(serverLockName(def.server)).catch(() =>
      undefined
    );
    return !pinned || pinned.some((t) => t.name === toolId.slice(colon + 1));
  }

  async call(call: ToolCall, ctx: CallContext): Promise<CallToolResult> {
    const def = this.#defs.get(call.ns);
    if (!def) return errorResult(`Unknown tool "${call.toolId}"`);
    const missing = this.#missing(def);
    if (missing.length) {
      return missingEnvResult(def.server, missing);
    }
    try {
      await this.#d.signIn?.beforeCall(def.server, def.proxyTo, def.headers);
      const session = await this.#guarded(def);
      const opts = upstreamCallOptions(def.server, ctx, {
        timeoutMs: this.#timeoutMs(),
        allowedToolPatterns: [],
        verify: this.#pins.guard(def.server),
      });
      const guard = opts.verify;
      const result = await guardedCall(call, ctx, async () => {
        if (guard) await session.verifyOnce(guard, opts.timeoutMs);
        return await session.callTool(call.action, call.args, opts);
      });
      this.#d.signIn?.succeeded(def.server);
      return result;
    } catch (err) {
      if (asksToOpenUrl(err)) return this.#signIn(def, call, err);
      const signIn = this.#d.signIn;
      if (!signIn) {
        if (!isPmlError(err)) throw err;
        return errorResult(err.message, { status: "error", code: err.code, server: def.server });
      }
      if (isPmlError(err, "SIGN_IN_REQUIRED") || await signIn.isWaiting(def.server, def.proxyTo)) {
        const resume = () => this.call(call, ctx);
        const now = ctx.openUrl &&
          await signIn.viaClient(def.server, def.proxyTo, ctx.openUrl, resume, ctx.signal);
        return now ?? await signIn.wait(def.server, def.proxyTo, resume);
      }
      const message = await signIn.scrub(def.server, def.proxyTo, errorMessage(err));
      if (!isPmlError(err)) throw new Error(message);
      return errorResult(message, { status: "error", code: err.code, server: def.server });
    }
  }

  /**
   * The server asks the user to open a URL (-32042, to sign in): that error passed on to the agent
   * (`openUrlError`), the values of the server's variables scrubbed from it; as an `isError` result
   * `UPSTREAM_ERROR` when it is no http(s) URL elicitation.
   */
  #signIn(def: RemoteDef, call: ToolCall, err: UrlElicitationRequiredError): CallToolResult {
    const secrets = def.envRequired.map((name) => this.#d.env[name] ?? "");
    const scrub = (text: string) => redactSecrets(text, secrets);
    const signIn = openUrlError(err, scrub);
    if (signIn) throw signIn;
    const message = scrub(
      `"${call.toolId}" failed: MCP error ${err.code}: ${
        bareMessage(err)
      } (${NOT_URL_ELICITATIONS})`,
    );
    return errorResult(message, { status: "error", code: "UPSTREAM_ERROR", server: def.server });
  }

  async close(): Promise<void> {
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.allSettled(sessions.map(async (s) => await (await s).close()));
  }

  #missing(def: RemoteDef): string[] {
    return def.envRequired.filter((n) => !this.#d.env[n]);
  }

  #timeoutMs(): number {
    return this.#d.timeoutMs ?? 60_000;
  }

  #session(def: RemoteDef): Promise<UpstreamSession> {
    let session = this.#sessions.get(def.server);
    if (!session) {
      const signIn = this.#d.signIn;
      session = connectRemote(def, this.#d.env, {
        fetch: this.#d.fetch,
        timeoutMs: this.#timeoutMs(),
        hub: this.#d.hub,
        authProvider: signIn?.providerFor(def.server, def.proxyTo, def.headers),
        signInPending: signIn && (() => signIn.isWaiting(def.server, def.proxyTo)),
      });
      this.#sessions.set(def.server, session);
      session.catch(() => this.#sessions.delete(def.server)); // tried again on the next call
    }
    return session;
  }

  /** The session, its metadata pinned (the user's own entry: a change recorded) and tools guarded. */
  async #guarded(def: RemoteDef): Promise<UpstreamSession> {
    const session = await this.#session(def);
    await this.#pins.recordOwn(def, def.server, metadataPin(def));
    this.#pins.guardTools(def.server);
    return session;
  }

  /** Connects, pins the metadata and the listed definitions (first time), returns them pinned. */
  async #readTools(def: RemoteDef): Promise<readonly ToolDefinition[] | undefined> {
    const session = await this.#guarded(def);
    const guard = this.#pins.guard(def.server);
    try {
      if (guard) await session.verifyOnce(guard, this.#timeoutMs());
    } catch (err) {
      if (err instanceof ToolsChanged) return undefined; // asked on the next call
      throw err;
    }
    return await this.#d.pins?.pinnedDefinitions(serverLockName(def.server)) ??
      pinnedDefinitions(await session.listTools(this.#timeoutMs()));
  }
}
