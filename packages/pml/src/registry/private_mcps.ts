/**
 * `private_mcps` of `.pml.json`: local MCP definitions, same schema as registry metadata, keyed by
 * namespace. They override the registries (with one debug line on stderr per namespace) and are
 * the user's own code, so they are not pinned in the lockfile; a deno module still passes the
 * import policy and runs in the same sandbox.
 *
 * @module
 */
import { resolve } from "node:path";
import type { PrivateMcp } from "../config/schema.ts";
import { PmlError } from "../errors.ts";

/** The source of a private deno MCP. */
export interface PrivateModuleSource {
  readonly namespace: string;
  readonly code: string;
  /** Where the code came from: the module path, or `.pml.json` for inline code. */
  readonly origin: string;
}

/** Private MCP definitions of one workspace. */
export class PrivateMcps {
  readonly #defs: Readonly<Record<string, PrivateMcp>>;
  readonly #workspace: string;
  readonly #debug: (line: string) => void;
  readonly #announced = new Set<string>();

  constructor(
    defs: Readonly<Record<string, PrivateMcp>>,
    workspace: string,
    debug: (line: string) => void,
  ) {
    this.#defs = defs;
    this.#workspace = workspace;
    this.#debug = debug;
  }

  /** The definition of namespace `ns`, if any (announcing the override once). */
  get(ns: string): PrivateMcp | undefined {
    const def = Object.hasOwn(this.#defs, ns) ? this.#defs[ns] : undefined;
    if (def && !this.#announced.has(ns)) {
      this.#announced.add(ns);
      this.#debug(
        `pml: debug: "${ns}" is defined in private_mcps of .pml.json; it overrides the registries`,
      );
    }
    return def;
  }

  /** Namespaces of private deno modules. */
  denoNamespaces(): string[] {
    return Object.entries(this.#defs).filter(([, d]) => d.type === "deno").map(([ns]) => ns);
  }

  /** The code of the private deno MCP `ns` (read from disk on every call: it is the user's file). */
  async denoSource(ns: string): Promise<PrivateModuleSource | undefined> {
    const def = this.get(ns);
    if (!def || def.type !== "deno") return undefined;
    if (def.code !== undefined) return { namespace: ns, code: def.code, origin: ".pml.json" };
    if (def.module === undefined) {
      throw new PmlError(
        "CONFIG_INVALID",
        `private_mcps."${ns}" in .pml.json is of type "deno" but has neither "module" nor "code"`,
      );
    }
    const path = resolve(this.#workspace, def.module);
    try {
      return { namespace: ns, code: await Deno.readTextFile(path), origin: path };
    } catch (err) {
      throw new PmlError(
        "CONFIG_INVALID",
        `Cannot read the module "${path}" of private_mcps."${ns}": ${(err as Error).message}`,
        { cause: err },
      );
    }
  }
}
