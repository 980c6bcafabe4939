/**
 * What PML passes on of the servers it fronts beyond their tools (docs/surface.md): resources and
 * their templates, reads and subscriptions, prompts, completions and the log level, aggregated
 * across every target's {@link Upstreams} and each put under PML's rules. A read or a prompt get
 * is decided like a tool call (`<server>:resource`, `<server>:prompt`; deny, ask with the
 * client's elicitation, allow) and audited; a refused one says how to allow it.
 *
 * @module
 */
import type {
  CompleteRequestParams,
  CompleteResult,
  GetPromptResult,
  LoggingLevel,
  Prompt,
  ReadResourceResult,
  Resource,
  ResourceTemplate,
} from "../sdk/types.ts";
import type { AuditEvent, AuditLog } from "../audit/audit.ts";
import { errorMessage, PmlError } from "../errors.ts";
import type { ApprovalDecision, Approvals } from "../permission/approvals.ts";
import type { PermissionStore } from "../permission/permission_store.ts";
import type { Target, Upstreams } from "../targets/target.ts";
import type { UpstreamSession } from "../targets/upstream/upstream_session.ts";
import { fromPmlUri } from "../targets/upstream/resource_uri.ts";
import type { UpstreamHub } from "../targets/upstream/upstream_hub.ts";
import { exposedName, idOfExposedName } from "./names.ts";
import { within } from "../targets/list_bound.ts";
import type { CallChannel } from "./gateway.ts";

/** What {@link Surface} needs (the gateway's own pieces). */
export interface SurfaceDeps {
  readonly targets: readonly Target[];
  readonly permissions: PermissionStore;
  readonly approvals: Approvals;
  readonly audit: AuditLog;
  /** The namespaces `tools/list` shows (`undefined`: every one). */
  readonly namespaces: () => ReadonlySet<string> | undefined;
  /** The open sessions and the client's log level (`upstream_hub.ts`). */
  readonly hub?: UpstreamHub;
  /**
   * The longest wait of a list for one server (default {@link SURFACE_LIST_BOUND_MS}): a server
   * that starts or answers later is left out of that list, the next one has it.
   */
  readonly listBoundMs?: number;
  /** The bound of one request to a server (default 60 s). */
  readonly timeoutMs?: number;
}

/**
 * How long `resources/list`, `resources/templates/list` and `prompts/list` wait for one server:
 * longer than `tools/list`'s bound (a stdio server may be started for it), short enough that a
 * silent server cannot hold a client's start.
 */
export const SURFACE_LIST_BOUND_MS = 10_000;

/** A fronted server, before its session is opened. */
interface Owned {
  readonly server: string;
  readonly origin: Upstreams["origin"];
  readonly up: Upstreams;
}

/** One fronted server with its session. */
interface Fronted {
  readonly server: string;
  readonly origin: Upstreams["origin"];
  readonly session: UpstreamSession;
}

/** The permission id of reading `server`'s resources. */
export const resourceId = (server: string): string => `${server}:resource`;
/** The permission id of getting `server`'s prompts. */
export const promptId = (server: string): string => `${server}:prompt`;

/** See the module documentation. */
export class Surface {
  readonly #d: SurfaceDeps;
  /** Exposed prompt names of the last `prompts/list`, to the server and its own name. */
  #prompts = new Map<string, { server: string; name: string }>();
  /** Which target fronts a server, once found. */
  readonly #owners = new Map<string, Upstreams>();

  constructor(deps: SurfaceDeps) {
    this.#d = deps;
  }

  get #timeoutMs(): number {
    return this.#d.timeoutMs ?? 60_000;
  }

  async listResources(): Promise<Resource[]> {
    const lists = await this.#each(
      "resources",
      resourceId,
      (f) => f.session.listResources(this.#timeoutMs),
    );
    return lists.flat();
  }

  async listResourceTemplates(): Promise<ResourceTemplate[]> {
    const lists = await this.#each(
      "resources",
      resourceId,
      (f) => f.session.listResourceTemplates(this.#timeoutMs),
    );
    return lists.flat();
  }

  /**
   * `resources/read` of a PML URI: the owner's permission, then its server's read. The permission
   * comes before the session is opened: a refusal names the `allow` line, whatever opening it
   * would have said (a missing API key, a server to start), and nothing is sent.
   */
  async readResource(uri: string, channel: CallChannel): Promise<ReadResourceResult> {
    const { owned, own } = await this.#owner(uri);
    await this.#allow(resourceId(owned.server), owned, `read "${uri}"`, channel);
    const fronted = await this.#resourceSession(owned, uri);
    const result = await fronted.session.readResource(own, this.#bound(channel));
    this.#audited("resource_read", fronted, { uri });
    return result;
  }

  async subscribe(uri: string, channel: CallChannel): Promise<void> {
    const { owned, own } = await this.#owner(uri);
    await this.#allow(resourceId(owned.server), owned, `watch "${uri}"`, channel);
    await (await this.#resourceSession(owned, uri)).session.subscribe(own, this.#bound(channel));
  }

  async unsubscribe(uri: string, channel: CallChannel): Promise<void> {
    const { owned, own } = await this.#owner(uri);
    await (await this.#resourceSession(owned, uri)).session.unsubscribe(own, this.#bound(channel));
  }

  /** `prompts/list`: every fronted server's prompts under PML's names (`server__prompt`). */
  async listPrompts(): Promise<Prompt[]> {
    const lists = await this.#each(
      "prompts",
      promptId,
      async (f) =>
        (await f.session.listPrompts(this.#timeoutMs)).map((p) => ({
          server: f.server,
          prompt: p,
        })),
    );
    const names = new Map<string, { server: string; name: string }>();
    const out: Prompt[] = [];
    for (const { server, prompt } of lists.flat()) {
      const name = exposedName(`${server}:${prompt.name}`);
      names.set(name, { server, name: prompt.name });
      out.push({ ...prompt, name, title: prompt.title ?? `${server}:${prompt.name}` });
    }
    this.#prompts = names;
    return out;
  }

  async getPrompt(
    name: string,
    args: Record<string, string> | undefined,
    channel: CallChannel,
  ): Promise<GetPromptResult> {
    const { owned, own } = await this.#promptOwner(name);
    await this.#allow(promptId(owned.server), owned, `get the prompt "${own}"`, channel);
    const fronted = await this.#session(owned);
    if (!fronted) throw unknownPrompt(name);
    const result = await fronted.session.getPrompt(own, args, this.#bound(channel));
    this.#audited("prompt_get", fronted, { prompt: own });
    return result;
  }

  /** `completion/complete` of a prompt's or a resource template's argument, asked of its owner. */
  async complete(params: CompleteRequestParams, channel: CallChannel): Promise<CompleteResult> {
    const ref = params.ref;
    const found = ref.type === "ref/prompt"
      ? await this.#promptOwner(ref.name).then(({ owned, own }) => ({
        owned,
        ref: { ...ref, name: own },
      }))
      : await this.#owner(ref.uri).then(({ owned, own }) => ({
        owned,
        ref: { ...ref, uri: own },
      }));
    const empty = { completion: { values: [], hasMore: false } };
    const id = ref.type === "ref/prompt" ? promptId(found.owned.server) : resourceId(
      found.owned.server,
    );
    // Suggestions read nothing the agent did not list; a denied server's are never asked for.
    if (this.#d.permissions.check(id) === "deny") return empty;
    const fronted = await this.#session(found.owned);
    if (!fronted?.session.capabilities.completions) return empty;
    return await fronted.session.complete({ ...params, ref: found.ref }, this.#bound(channel));
  }

  /** `logging/setLevel`: every running server that logs gets it, and each one started later. */
  async setLoggingLevel(level: LoggingLevel): Promise<void> {
    await this.#d.hub?.setLoggingLevel(level);
  }

  /**
   * `run` on the session of every shown server that offers `capability` and whose permission
   * `idOf` is not denied; a server that fails is said on stderr and left out.
   */
  async #each<T>(
    capability: "resources" | "prompts",
    idOf: (server: string) => string,
    run: (f: Fronted) => Promise<T>,
  ): Promise<T[]> {
    const shown = this.#d.namespaces();
    const jobs: Promise<T | undefined>[] = [];
    for (const t of this.#d.targets) {
      const up = t.upstreams;
      if (!up) continue;
      const servers: string[] = await up.servers(shown).catch(() => []);
      for (const server of servers) {
        if (this.#d.permissions.check(idOf(server)) === "deny") continue;
        jobs.push((async () => {
          try {
            return await within(this.#d.listBoundMs ?? SURFACE_LIST_BOUND_MS, async () => {
              const session = await up.session(server);
              if (!session?.capabilities[capability]) return undefined;
              return await run({ server, origin: up.origin, session });
            });
          } catch (err) {
            console.error(`pml: ${capability} of "${server}" left out: ${errorMessage(err)}`);
            return undefined;
          }
        })());
      }
    }
    return (await Promise.all(jobs)).filter((r): r is Awaited<T> => r !== undefined);
  }

  /** The server a name of {@link Surface.listPrompts} belongs to (not opened), and its own name. */
  async #promptOwner(name: string): Promise<{ owned: Owned; own: string }> {
    const known = this.#prompts.get(name);
    const id = known ? undefined : idOfExposedName(name);
    const server = known?.server ?? id?.slice(0, id.indexOf(":"));
    const own = known?.name ?? id?.slice(id.indexOf(":") + 1);
    const owned = server && own ? await this.#owned(server) : undefined;
    if (!owned || own === undefined) throw unknownPrompt(name);
    return { owned, own };
  }

  /** The server a PML URI belongs to (not opened), and its own URI. */
  async #owner(uri: string): Promise<{ owned: Owned; own: string }> {
    const parsed = fromPmlUri(uri);
    const owned = parsed && await this.#owned(parsed.server);
    if (!parsed || !owned) throw unknownResource(uri);
    return { owned, own: parsed.uri };
  }

  async #owned(server: string): Promise<Owned | undefined> {
    const up = this.#owners.get(server) ?? await this.#ownerOf(server);
    return up && { server, origin: up.origin, up };
  }

  /** The session of an owned server, opened now if need be (`undefined`: its pin changed). */
  async #session(owned: Owned): Promise<Fronted | undefined> {
    const session = await owned.up.session(owned.server);
    return session && { server: owned.server, origin: owned.origin, session };
  }

  async #resourceSession(owned: Owned, uri: string): Promise<Fronted> {
    const fronted = await this.#session(owned);
    if (!fronted) throw unknownResource(uri);
    return fronted;
  }

  /** The first target's {@link Upstreams} that fronts `server` (kept: a server has one owner). */
  async #ownerOf(server: string): Promise<Upstreams | undefined> {
    for (const t of this.#d.targets) {
      const up = t.upstreams;
      if (!up) continue;
      const servers: string[] = await up.servers(new Set([server])).catch(() => []);
      if (!servers.includes(server)) continue;
      this.#owners.set(server, up);
      return up;
    }
    return undefined;
  }

  /**
   * Decides `id` as a tool call is decided: `deny` refuses, `allow` runs, `ask` asks the human
   * through the client's elicitation; without one (or unanswered) it is refused with how to allow.
   */
  async #allow(
    id: string,
    f: Pick<Fronted, "server" | "origin">,
    what: string,
    channel: CallChannel,
  ): Promise<void> {
    const decision = this.#d.permissions.check(id);
    if (decision === "allow") return;
    if (decision === "deny") {
      await this.#d.audit.write("permission_denied", { tool: id, server: f.server });
      throw new PmlError(
        "PERMISSION_DENIED",
        `Permission denied: "${id}" is denied by .pml.json permissions`,
      );
    }
    let decided: ApprovalDecision | undefined;
    if (channel.elicit) {
      await this.#d.approvals.ask(
        {
          type: "tool_permission",
          description: `Allow the MCP server "${f.server}" to ${what}?`,
          context: {
            tool: id,
            // A local server's data is read here; a remote one's is a call out (docs/surface.md).
            mcp_server: { name: f.server, read_only: f.origin === "local" },
          },
        },
        (d) => {
          decided = d;
          return Promise.resolve({ content: [] });
        },
        { elicit: channel.elicit },
      );
    }
    if (decided === "always") await this.#d.permissions.allowAlways(id);
    if (decided === "yes" || decided === "always") return;
    if (decided === "no") {
      await this.#d.audit.write("permission_denied", { tool: id, server: f.server, by: "user" });
      throw new PmlError("PERMISSION_DENIED", `Permission denied: the user refused "${id}"`);
    }
    throw new PmlError(
      "APPROVAL_REQUIRED",
      `"${id}" needs approval (to ${what}) and none could be asked here: add "${id}" to ` +
        `permissions.allow in .pml.json (\`pml trust\` after editing it), or ask from a client ` +
        `that supports elicitation and answer "always"`,
    );
  }

  #bound(channel: CallChannel): { timeoutMs: number; signal?: AbortSignal } {
    return { timeoutMs: this.#timeoutMs, signal: channel.signal };
  }

  /** Audited without holding the answer (the log's writes keep their order; it never throws). */
  #audited(event: AuditEvent, f: Fronted, fields: Record<string, unknown>): void {
    void this.#d.audit.write(event, { server: f.server, origin: f.origin, ...fields });
  }
}

function unknownResource(uri: string): PmlError {
  return new PmlError(
    "UNKNOWN_RESOURCE",
    `Unknown resource "${uri}": no MCP of this workspace serves it; see resources/list`,
  );
}

function unknownPrompt(name: string): PmlError {
  return new PmlError(
    "UNKNOWN_PROMPT",
    `Unknown prompt "${name}": no MCP of this workspace provides it; see prompts/list`,
  );
}
