/**
 * What a target that fronts servers keeps of their pins during a session (`.pml/mcp.lock`, DESIGN
 * §12): which metadata objects were checked, which servers' own tool lists are guarded, and one
 * guard per server (`tool_guard.ts`). Stdio and remote servers alike.
 *
 * @module
 */
import type { McpPins, MetadataPin, PinCheck, ToolDefinition } from "../../registry/mcp_pins.ts";
import type { Routing } from "../../routing/routing.ts";
import type { ToolInfo } from "../target.ts";
import type { Tool } from "../../sdk/types.ts";
import { metaWithPmlUris } from "./resource_uri.ts";
import { serverLockName, toolGuard } from "./tool_guard.ts";
import type { VerifyTools } from "./upstream_session.ts";

/** See the module documentation. `pins` absent: nothing is pinned, every check passes. */
export class ServerPins {
  readonly pins?: McpPins;
  /** Metadata objects whose pin was checked in this session. */
  readonly #checked = new WeakSet<object>();
  /** Servers whose metadata is pinned: their own tool lists are checked too. */
  readonly #guarded = new Set<string>();
  readonly #guards = new Map<string, VerifyTools>();

  constructor(pins?: McpPins) {
    this.pins = pins;
  }

  /** True when `meta`'s pin was checked in this session (or nothing is pinned). */
  checked(meta: object): boolean {
    return !this.pins || this.#checked.has(meta);
  }

  markChecked(meta: object): void {
    this.#checked.add(meta);
  }

  /**
   * Pins the metadata of the user's own entry (`private_mcps` in their trusted `.pml.json`): a
   * change there is recorded, not asked (its tools' definitions still are).
   */
  async recordOwn(meta: object, server: string, pin: MetadataPin): Promise<void> {
    if (!this.pins || this.#checked.has(meta)) return;
    const check = await this.pins.checkMetadata(serverLockName(server), pin);
    if (check.kind === "changed") await check.accept();
    this.#checked.add(meta);
  }

  /** Compares `meta` with its pin (recorded when none); marked checked when it is the same. */
  async checkMetadata(meta: object, server: string, pin: MetadataPin): Promise<PinCheck> {
    if (!this.pins) return { kind: "same" };
    const check = await this.pins.checkMetadata(serverLockName(server), pin);
    if (check.kind === "same") this.#checked.add(meta);
    return check;
  }

  /** From now on, `server`'s own tool list is checked before its calls. */
  guardTools(server: string): void {
    if (this.pins) this.#guarded.add(server);
  }

  /** The guard of `server`'s session, when its tools are guarded. */
  guard(server: string): VerifyTools | undefined {
    if (!this.pins || !this.#guarded.has(server)) return undefined;
    let guard = this.#guards.get(server);
    if (!guard) this.#guards.set(server, guard = toolGuard(this.pins, server));
    return guard;
  }
}

/**
 * Pinned definitions of `server` as `tools/list` shows them, whole as it gave them (annotations,
 * title, icons, output schema, `_meta` with an MCP App's resource read back through PML).
 */
export function listedTools(
  server: string,
  defs: readonly ToolDefinition[],
  routeOf: (id: string) => Routing,
): ToolInfo[] {
  return defs.map((d) => {
    const id = `${server}:${d.name}`;
    const annotations = d.annotations as ToolInfo["annotations"];
    const meta = metaWithPmlUris(server, d._meta);
    return {
      id,
      description: d.description,
      inputSchema: d.inputSchema,
      routing: routeOf(id),
      ...(annotations ? { annotations } : {}),
      ...(d.title !== undefined ? { title: d.title } : {}),
      ...(d.icons !== undefined ? { icons: d.icons as Tool["icons"] } : {}),
      ...(d.outputSchema !== undefined
        ? { outputSchema: d.outputSchema as Tool["outputSchema"] }
        : {}),
      ...(meta !== undefined ? { _meta: meta } : {}),
      ...(d.execution !== undefined ? { execution: d.execution as Tool["execution"] } : {}),
    };
  });
}
