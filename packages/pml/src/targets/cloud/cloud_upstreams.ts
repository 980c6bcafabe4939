/**
 * The registry http MCPs the PML cloud proxies, as {@link Upstreams} of the `CloudTarget`: their
 * resources, prompts and completions reach the agent through the same surface as a server PML
 * fronts itself (docs/surface.md), under the same names, permission ids and rules. Each server is
 * one {@link UpstreamSession} on the cloud's relay of that server (`X-PML-Server`, docs/cloud.md),
 * so its URIs are put under its namespace here, as for any fronted server, and whatever a URI of
 * it names reads back to it alone.
 *
 * A server shows when the cloud lists it as an http MCP (`_meta["pml/kind"]: "http"`), its keys
 * are available (the same `.pml.json` `env` rule as its tool calls; only its own declared keys are
 * sent), and its pin holds (`http_pins.ts`: a changed `proxyTo` or tool definition shows nothing
 * of it until its next call's `integrity` question is approved).
 *
 * @module
 */
import type { Config } from "../../config/config.ts";
import { errorMessage, isPmlError, PmlError } from "../../errors.ts";
import type { Upstreams } from "../target.ts";
import { type UpstreamCallOptions, UpstreamSession } from "../upstream/upstream_session.ts";
import type { UpstreamHub } from "../upstream/upstream_hub.ts";
import type { StreamMessage } from "./call_post.ts";
import { byokHeader } from "./byok.ts";
import type { CloudClient } from "./cloud_client.ts";
import type { CloudTool } from "./cloud_tool_list.ts";

/** What {@link CloudUpstreams} needs of the `CloudTarget`. */
export interface CloudUpstreamsDeps {
  readonly client: CloudClient;
  readonly config: Pick<Config, "byokEnv" | "byokValues">;
  /** The cloud's tools, once listed. */
  readonly tools: () => ReadonlyMap<string, CloudTool> | undefined;
  /** Makes sure a tool list is there (bounded, `CloudToolList.ensure`). */
  readonly ensure: () => Promise<void>;
  /** True when the server's pin holds (recorded on first use); absent: not pinned. */
  readonly pinned?: (server: string, tools: readonly CloudTool[]) => Promise<boolean>;
  /** Where the servers' notifications outside a call go (`upstream_hub.ts`). */
  readonly hub?: UpstreamHub;
}

/** A call of a registry http MCP, as its session answers what the server sends about it. */
export interface RelayedCall {
  /** A message of the call's stream: the server's request, log line, cancellation. */
  readonly deliver: (message: StreamMessage) => void;
  /** The call ended. */
  readonly end: () => void;
}

/** See the module documentation. */
export class CloudUpstreams implements Upstreams {
  readonly origin = "remote" as const;
  readonly #d: CloudUpstreamsDeps;
  readonly #sessions = new Map<string, Promise<UpstreamSession>>();

  constructor(deps: CloudUpstreamsDeps) {
    this.#d = deps;
  }

  async servers(namespaces?: ReadonlySet<string>): Promise<string[]> {
    await this.#d.ensure();
    const out = new Set<string>();
    for (const tool of this.#d.tools()?.values() ?? []) {
      const ns = namespaceOf(tool);
      if (tool.http && ns !== "pml" && (!namespaces || namespaces.has(ns))) out.add(ns);
    }
    return [...out];
  }

  /**
   * The session of `server`, opened on first use; `undefined` when the cloud proxies no such http
   * MCP or its pin changed.
   *
   * @throws {PmlError} `BYOK_MISSING` naming the key and how to provide it; `CLOUD_UNREACHABLE`
   * when the cloud's relay did not open.
   */
  async session(server: string): Promise<UpstreamSession | undefined> {
    const tools = [...this.#d.tools()?.values() ?? []].filter((t) =>
      t.http && namespaceOf(t) === server
    );
    if (!tools.length) return undefined;
    const { byokEnv, byokValues } = this.#d.config;
    const declared = [...new Set(tools.flatMap((t) => t.env ?? []))];
    const byok = byokHeader(`${server}:resource`, declared, byokEnv, byokValues);
    if (this.#d.pinned && !(await this.#d.pinned(server, tools))) return undefined;
    let session = this.#sessions.get(server);
    if (!session) {
      session = this.#open(server, byok);
      this.#sessions.set(server, session);
      session.catch(() => this.#sessions.delete(server));
    }
    return await session;
  }

  /**
   * A call of `server`'s tool (already permitted and pin-checked by the `CloudTarget`) that the
   * cloud answers on a stream: what its server sends about it goes to that server's session (opened
   * now if need be, and with it the cloud's stream of what the server sends outside a call), where
   * the rules of a fronted server answer it under `opts` (docs/cloud.md, "During a call").
   */
  relayed(server: string, opts: UpstreamCallOptions): RelayedCall {
    const opening = (this.#sessions.get(server) ?? this.session(server)).catch(() => undefined);
    let release: (() => void) | undefined;
    let ended = false;
    void opening.then((session) => {
      if (session && !ended) release = session.adopt(opts);
    });
    return {
      // What the call's own stream brings is the call's, whatever else is in flight.
      deliver: (message) => void opening.then((session) => session?.deliver(message, opts)),
      end: () => {
        ended = true;
        release?.();
      },
    };
  }

  async #open(server: string, byok: string | undefined): Promise<UpstreamSession> {
    const client = this.#d.client;
    const transport = await client.serverTransport(server, byok);
    try {
      return await UpstreamSession.open(server, transport, {
        timeoutMs: client.timeoutMs,
        hub: this.#d.hub,
      });
    } catch (err) {
      await transport.close().catch(() => {});
      if (isPmlError(err)) throw err;
      throw new PmlError(
        "CLOUD_UNREACHABLE",
        `the PML cloud at "${client.url}" did not relay the MCP server "${server}": ` +
          errorMessage(err),
        { cause: err },
      );
    }
  }

  /** Closes every session (nothing stays open at the cloud: its relay is stateless). */
  async close(): Promise<void> {
    const open = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.all(open.map(async (s) => await (await s.catch(() => undefined))?.close()));
  }
}

function namespaceOf(tool: CloudTool): string {
  return tool.info.id.slice(0, tool.info.id.indexOf(":"));
}
