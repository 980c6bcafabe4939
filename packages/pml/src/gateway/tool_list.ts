/**
 * What `tools/list` shows and the names it shows them under: PML's own tools, then every target's
 * (first target wins an id; a denied tool is not shown), each under its exposed name
 * (`names.ts`), definitions whole (title, icons, annotations, output schema, `_meta`,
 * `execution`). The last list is what names read back by, which tools are typed (an
 * `outputSchema`) and which run as a task (`execution.taskSupport`).
 *
 * @module
 */
import type { Tool } from "../sdk/types.ts";
import { namedNamespaces } from "../permission/patterns.ts";
import type { PermissionStore } from "../permission/permission_store.ts";
import type { Target, ToolInfo } from "../targets/target.ts";
import { exposedName, idOfExposedName, isToolId } from "./names.ts";
import type { MetaTool } from "./call_relay.ts";

/** What the list is made of. */
export interface ToolListDeps {
  readonly targets: readonly Target[];
  readonly permissions: PermissionStore;
  /** PML's own tools, listed first. */
  readonly meta: ReadonlyMap<string, MetaTool>;
  /** Namespaces `.pml.json` declares (private MCPs): always listed. */
  readonly declaredNamespaces?: readonly string[];
  /** Runs once, after the first list has been answered. */
  readonly afterFirstList?: () => void;
}

/** See the module documentation. */
export class ToolList {
  readonly #deps: ToolListDeps;
  #names = new Map<string, string>();
  /** Tools listed with an `outputSchema` (see `Gateway.callTool`). */
  #typed = new Set<string>();
  /** Tools whose definition says they run as a task (`execution.taskSupport`). */
  #tasked = new Set<string>();
  #listed = false;
  #afterFirstList?: ReturnType<typeof setTimeout>;

  constructor(deps: ToolListDeps) {
    this.#deps = deps;
  }

  /** A `tools/list` has been answered. */
  get listed(): boolean {
    return this.#listed;
  }

  /** The tool id of a name the last list showed. */
  idOf(name: string): string | undefined {
    return this.#names.get(name);
  }

  /** The last list showed `toolId` with an `outputSchema`. */
  typed(toolId: string): boolean {
    return this.#typed.has(toolId);
  }

  /** The last list's definition of `toolId` (a denied tool's too) says it runs as a task. */
  tasked(toolId: string): boolean {
    return this.#tasked.has(toolId);
  }

  /**
   * The namespaces whose MCPs are shown: those the permissions name (`allow`/`ask`) or `.pml.json`
   * declares; `undefined` (every one) under a wildcard `*`.
   */
  shownNamespaces(): ReadonlySet<string> | undefined {
    const perms = this.#deps.permissions.current;
    if (perms.allow.includes("*") || perms.ask.includes("*")) return undefined;
    return new Set([
      ...namedNamespaces(perms, ["allow", "ask"]),
      ...(this.#deps.declaredNamespaces ?? []),
    ]);
  }

  async list(): Promise<Tool[]> {
    const shown = this.shownNamespaces();
    const seen = new Set<string>();
    const infos: ToolInfo[] = [];
    // Asked together: the registry's and the cloud's bounded waits overlap instead of adding up.
    const lists = await Promise.all(
      this.#deps.targets.map((t) => t.listTools(shown)),
    );
    // A denied tool's definition still says whether it runs as a task: a task asked of it is
    // refused by the permissions (a failed task), not as a tool that is no task.
    const tasked = new Set<string>();
    for (const list of lists) {
      for (const info of list) {
        if (seen.has(info.id)) continue;
        seen.add(info.id);
        const support = info.execution?.taskSupport;
        if (support === "optional" || support === "required") tasked.add(info.id);
        if (this.#deps.permissions.check(info.id) !== "deny") infos.push(info);
      }
    }
    const names = new Map<string, string>();
    const typed = new Set<string>();
    const tools: Tool[] = [];
    for (const t of [...this.#deps.meta.values(), ...infos]) {
      const name = exposedName(t.id);
      names.set(name, t.id);
      const whole = t as Partial<ToolInfo>;
      if (whole.outputSchema) typed.add(t.id);
      tools.push({
        name,
        title: whole.title ?? t.id,
        description: t.description,
        inputSchema: t.inputSchema as Tool["inputSchema"],
        ...(t.annotations ? { annotations: t.annotations } : {}),
        ...(whole.icons ? { icons: whole.icons } : {}),
        ...(whole.outputSchema ? { outputSchema: whole.outputSchema } : {}),
        ...(whole._meta ? { _meta: whole._meta } : {}),
        ...(whole.execution ? { execution: whole.execution } : {}),
      });
    }
    this.#names = names;
    this.#typed = typed;
    this.#tasked = tasked;
    const first = !this.#listed;
    this.#listed = true;
    // A timer, not a microtask: the answer is written before the hook takes the thread.
    if (first && this.#deps.afterFirstList) {
      this.#afterFirstList = setTimeout(this.#deps.afterFirstList, 0);
    }
    return tools;
  }

  /**
   * Maps an exposed name or a tool id to the tool id. A name that `tools/list` did not show (a
   * tool the permissions do not name, or a denied one) is read back as `ns__action` → `ns:action`,
   * so that it meets its permission ("unmatched → ask", "denied by .pml.json") like its tool id.
   */
  async resolveName(name: string): Promise<string | undefined> {
    if (this.#deps.meta.has(name) || isToolId(name)) return name;
    // Listed once if never listed (a client may call before tools/list): shortened names and ids
    // with other characters than `[A-Za-z0-9_-]` only resolve through the list. After that, a
    // name the list did not show is read back as it stands, without asking every target again.
    if (!this.#names.has(name) && !this.#listed) await this.list();
    return this.#names.get(name) ?? idOfExposedName(name);
  }

  /** Stops the hook after the first list, if it has not run yet. */
  close(): void {
    clearTimeout(this.#afterFirstList);
  }
}
