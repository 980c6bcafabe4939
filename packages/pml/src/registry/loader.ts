/**
 * The registry loader: tool id → verified module source, ready for the sandbox.
 *
 * 1. `private_mcps` first (override, debug line); then the in-session memory (re-hashed from the
 *    cache, no network); then the registry: the name pinned in the lockfile (`GET /mcp/<name>` →
 *    302, `If-None-Match`), or the catalog (`GET /mcp?tool=`) for a tool never used here.
 * 2. The bytes are hashed by `pml`, parsed, and refused if an import breaks the policy
 *    (`import_blocked` audit line). Registry imports are loaded the same way (depth ≤ 8).
 * 3. Lockfile: a first fetch is recorded; a different hash returns an `integrity` outcome whose
 *    `accept()` updates the lock (the caller asks the human); until then the code is not cached
 *    for running.
 * 4. Registry unreachable: a locked and cached module is used with a warning on stderr; anything
 *    else is an error that says what to do.
 *
 * @module
 */
import type { AuditLog } from "../audit/audit.ts";
import { PmlError } from "../errors.ts";
import { parseFqdn, toolIdOf } from "./fqdn.ts";
import { checkImports, registryImport } from "./import_policy.ts";
import { digest, integrityToHex } from "./integrity.ts";
import type { LockEntry, Lockfile } from "./lockfile.ts";
import type { ModuleCache } from "./module_cache.ts";
import { diffDefinitions, moduleToolDefinitions, toolHashes } from "./mcp_pins.ts";
import { type ModuleScan, scanModule } from "./module_scan.ts";
import type { PrivateMcps } from "./private_mcps.ts";
import { type FetchedEntry, isUnreachable, type RegistryClient } from "./registry_client.ts";

/** A module whose bytes passed integrity and import checks. */
export interface LoadedModule {
  /** 4-part name (`private.local.<ns>.module` for private MCPs). */
  readonly name: string;
  readonly fqdn: string;
  readonly source: "registry" | "private";
  readonly registry?: string;
  /** SHA-256 hex of `code`. */
  readonly hex: string;
  readonly code: string;
  readonly scan: ModuleScan;
  /** Registry imports, by the specifier written in `code`. */
  readonly deps: readonly { readonly specifier: string; readonly module: LoadedModule }[];
  /** True when the registry was unreachable and the cached copy was used. */
  readonly offline: boolean;
}

/** A locked entry whose bytes changed. */
export interface IntegrityChange {
  readonly name: string;
  readonly old: { readonly fqdn: string; readonly integrity: string; readonly fetchedAt: string };
  readonly new: { readonly fqdn: string; readonly integrity: string };
  /**
   * What changed in the module's tool definitions (`__meta__`), one line per field; absent when the
   * old code is not in the local cache.
   */
  readonly tools?: readonly string[];
}

/**
 * An integrity change as the audit log keeps it: names and hashes, and how many tool-definition
 * fields changed, never their text. `.pml/audit.log` lies in the workspace, where the agent's read
 * tools see it; the new text (a description may carry an injection aimed at the agent) is shown
 * only on the human's channels.
 */
function auditedChanges(changes: readonly IntegrityChange[]) {
  return changes.map(({ tools, ...rest }) => ({ ...rest, toolFieldsChanged: tools?.length ?? 0 }));
}

/** What {@link RegistryLoader.load} found. */
export type LoadOutcome =
  | { readonly kind: "ready"; readonly module: LoadedModule }
  | {
    readonly kind: "integrity";
    readonly changes: readonly IntegrityChange[];
    /** Records the new hashes in the lockfile and returns the module. */
    accept(): Promise<LoadedModule>;
  };

/** Dependencies of {@link RegistryLoader}. */
export interface RegistryLoaderDeps {
  readonly client: RegistryClient;
  readonly cache: ModuleCache;
  readonly lockfile: () => Promise<Lockfile>;
  readonly privateMcps: PrivateMcps;
  readonly audit: AuditLog;
  /** Warnings and debug lines (stderr). */
  readonly warn: (line: string) => void;
  readonly now?: () => number;
}

const MAX_DEPTH = 8;

interface Pending {
  readonly module: LoadedModule;
  readonly records: [string, LockEntry][];
  readonly changes: IntegrityChange[];
  readonly bytes: Uint8Array[];
  /** Pins found unchanged. */
  readonly checked: string[];
}

/** See the module documentation. */
export class RegistryLoader {
  readonly #d: RegistryLoaderDeps;
  readonly #now: () => number;
  readonly #memory = new Map<string, { module: LoadedModule; until: number }>();
  /** Digests whose cached copy was found changed on disk (and removed) in this session. */
  readonly #tampered = new Map<string, PmlError>();

  constructor(deps: RegistryLoaderDeps) {
    this.#d = deps;
    this.#now = deps.now ?? Date.now;
  }

  /** Loads the module providing `toolId` (`ns:action`). */
  async load(toolId: string): Promise<LoadOutcome> {
    const ns = toolId.slice(0, toolId.indexOf(":"));
    const priv = await this.#d.privateMcps.denoSource(ns);
    if (priv) {
      return { kind: "ready", module: await this.#private(priv.namespace, priv.code, priv.origin) };
    }
    const hit = this.#memory.get(toolId);
    if (hit && hit.until > this.#now()) {
      try {
        return { kind: "ready", module: await this.#reverify(hit.module) };
      } catch (err) {
        this.#memory.delete(toolId);
        if (!(err instanceof PmlError && err.code === "CACHE_TAMPERED")) throw err;
        await this.#d.audit.write("integrity", {
          tool: toolId,
          event: "cache_tampered",
          message: err.message,
        });
        this.#d.warn(`pml: warning: ${err.message}; fetching it again`);
      }
    }
    const lock = await this.#d.lockfile();
    const lockedName = lock.entries().find(([n, e]) => e.type === "deno" && toolIdOf(n) === toolId)
      ?.[0];
    const fetched = await this.#fetchRoot(toolId, lockedName, lock);
    const pending: Pending = {
      module: undefined!,
      records: [],
      changes: [],
      bytes: [],
      checked: [],
    };
    const module = await this.#node(toolId, fetched, lock, pending, 0);
    const done = { ...pending, module };
    const remember = (m: LoadedModule) => {
      if (!m.offline) {
        this.#memory.set(toolId, { module: m, until: this.#now() + fetched.maxAgeMs });
      }
      return m;
    };
    if (!done.changes.length) {
      return { kind: "ready", module: remember(await this.#commit(done, toolId)) };
    }
    await this.#d.audit.write("integrity", {
      tool: toolId,
      event: "changed",
      changes: auditedChanges(done.changes),
    });
    return {
      kind: "integrity",
      changes: done.changes,
      accept: async () => {
        await this.#d.audit.write("integrity", {
          tool: toolId,
          event: "approved",
          changes: auditedChanges(done.changes),
        });
        return remember(await this.#commit(done, toolId));
      },
    };
  }

  /** Refusal of an integrity change (audit line; the lock keeps the old hash). */
  async refuse(toolId: string, changes: readonly IntegrityChange[]): Promise<void> {
    await this.#d.audit.write("integrity", {
      tool: toolId,
      event: "refused",
      changes: auditedChanges(changes),
    });
  }

  async #fetchRoot(
    toolId: string,
    lockedName: string | undefined,
    lock: Lockfile,
  ): Promise<Fetched> {
    try {
      if (lockedName) {
        const f = await this.#fromRegistries(lockedName, lock.get(lockedName));
        if (f) return f;
      }
      const item = await this.#d.client.findTool(toolId);
      if (!item) {
        const registries = this.#d.client.registries;
        throw new PmlError(
          "REGISTRY_NOT_FOUND",
          registries.length
            ? `No registry (${registries.join(", ")}) has a deno module for "${toolId}"`
            : `No registry is configured to load "${toolId}": set PML_API_KEY (cloud registry) or list "registries" in .pml.json`,
        );
      }
      return await this.#fetchPinned(item.registry, item.fqdn, lock.get(parseFqdn(item.fqdn).name));
    } catch (err) {
      if (!isUnreachable(err)) throw err;
      return await this.#offline(toolId, lockedName, lock, err);
    }
  }

  /** Asks each registry in order for `name`; `undefined` when none has it. */
  async #fromRegistries(name: string, locked: LockEntry | undefined): Promise<Fetched | undefined> {
    let failure: PmlError | undefined;
    for (const registry of this.#d.client.registries) {
      try {
        return await this.#fetchPinned(registry, name, locked);
      } catch (err) {
        if (err instanceof PmlError && err.code === "REGISTRY_NOT_FOUND") continue;
        if (!isUnreachable(err)) throw err;
        failure = err;
      }
    }
    if (failure) throw failure;
    return undefined;
  }

  async #fetchPinned(
    registry: string,
    fqdn: string,
    locked: LockEntry | undefined,
  ): Promise<Fetched> {
    const lockedHex = locked && integrityToHex(locked.integrity);
    const cached = lockedHex ? await this.#cachedOrNull(lockedHex) : undefined;
    let f: FetchedEntry;
    try {
      f = await this.#d.client.fetchEntry(registry, fqdn, cached ? lockedHex : undefined);
    } catch (err) {
      const current = (err as PmlError).details?.currentFqdn;
      if (
        !(err instanceof PmlError && err.code === "REGISTRY_HASH_MISMATCH" &&
          typeof current === "string")
      ) {
        throw err;
      }
      f = await this.#d.client.fetchEntry(registry, current, cached ? lockedHex : undefined);
    }
    const bytes = f.bytes ?? cached;
    if (!bytes) return await this.#fetchPinned(registry, fqdn, undefined);
    return { ...f, bytes, offline: false };
  }

  async #cachedOrNull(hex: string): Promise<Uint8Array | undefined> {
    return (await this.#cachedOrTampered(hex)).bytes;
  }

  /** The cached bytes, or why there are none: a tampered copy is audited, removed and named. */
  async #cachedOrTampered(hex: string): Promise<{ bytes?: Uint8Array; tampered?: PmlError }> {
    try {
      const bytes = await this.#d.cache.get(hex);
      // The tampered copy was removed when first read; remember why it is missing.
      return bytes ? { bytes } : { tampered: this.#tampered.get(hex) };
    } catch (err) {
      if (err instanceof PmlError && err.code === "CACHE_TAMPERED") {
        await this.#d.audit.write("integrity", { event: "cache_tampered", message: err.message });
        this.#d.warn(`pml: warning: ${err.message}`);
        this.#tampered.set(hex, err);
        return { tampered: err };
      }
      throw err;
    }
  }

  async #offline(
    toolId: string,
    name: string | undefined,
    lock: Lockfile,
    cause: PmlError,
  ): Promise<Fetched> {
    const entry = name ? lock.get(name) : undefined;
    const hex = entry && integrityToHex(entry.integrity);
    const { bytes, tampered } = hex ? await this.#cachedOrTampered(hex) : {};
    if (tampered) {
      throw new PmlError(
        "CACHE_TAMPERED",
        `Cannot load "${toolId}": the registry is unreachable (${cause.message}) and the cached copy of "${entry?.fqdn}" was changed on disk (${tampered.message}). ` +
          `It was not run. Reconnect to the registry and call the tool again: the pinned version will be fetched and checked against .pml/mcp.lock`,
        { cause: tampered, details: tampered.details },
      );
    }
    if (!name || !entry || !hex || !bytes) {
      throw new PmlError(
        cause.code,
        `Cannot load "${toolId}": the registry is unreachable (${cause.message}) and the module is not in the local cache. ` +
          `Check the network or the "registries"/"cloudUrl" of .pml.json, then call the tool again; it will be cached after one successful use`,
        { cause },
      );
    }
    this.#d.warn(
      `pml: warning: registry unreachable (${cause.message}); running the cached "${entry.fqdn}" for "${toolId}" (locked ${entry.fetchedAt})`,
    );
    return {
      registry: "",
      fqdn: entry.fqdn,
      name,
      type: "deno",
      routing: entry.routing,
      bytes,
      hex,
      maxAgeMs: 0,
      offline: true,
    };
  }

  /** Scans, checks imports, loads registry imports and compares with the lock. */
  async #node(
    toolId: string,
    f: Fetched,
    lock: Lockfile,
    p: Pending,
    depth: number,
  ): Promise<LoadedModule> {
    if (f.type !== "deno") {
      throw new PmlError(
        "REGISTRY_WRONG_TYPE",
        `"${f.fqdn}" is a ${f.type} MCP, not a deno module`,
      );
    }
    const code = new TextDecoder("utf-8", { fatal: true }).decode(f.bytes);
    const scan = await this.#scan(code, f.fqdn);
    await this.#policy(toolId, f.fqdn, scan);
    const d = await digest(f.bytes);
    const locked = lock.get(f.name);
    const defs = moduleToolDefinitions(scan);
    const entry: LockEntry = {
      fqdn: f.fqdn,
      integrity: d.integrity,
      type: "deno",
      routing: f.routing,
      fetchedAt: new Date(this.#now()).toISOString(),
      tools: await toolHashes(defs),
    };
    if (!locked) p.records.push([f.name, entry]);
    else if (locked.integrity !== d.integrity) {
      p.records.push([f.name, entry]);
      const before = await this.#definitionsOf(locked.integrity);
      p.changes.push({
        name: f.name,
        old: { fqdn: locked.fqdn, integrity: locked.integrity, fetchedAt: locked.fetchedAt },
        new: { fqdn: f.fqdn, integrity: d.integrity },
        ...(before ? { tools: diffDefinitions(before, defs) } : {}),
      });
    } else if (!locked.tools) p.records.push([f.name, entry]); // pinned before tools were
    else p.checked.push(f.name); // unchanged: the pin is in use (lockfile clean-up by age)
    p.bytes.push(f.bytes);
    const deps: LoadedModule["deps"][number][] = [];
    for (const ref of scan.imports) {
      const target = ref.specifier && registryImport(ref.specifier, this.#d.client.registries);
      if (!target) continue;
      if (depth >= MAX_DEPTH) {
        throw new PmlError(
          "IMPORT_BLOCKED",
          `"${f.fqdn}" imports registry modules deeper than ${MAX_DEPTH} levels`,
        );
      }
      const name = parseFqdn(target.fqdn).name;
      let dep: Fetched;
      try {
        dep = await this.#fetchPinned(target.registry, target.fqdn, lock.get(name));
      } catch (err) {
        if (!isUnreachable(err)) throw err;
        dep = await this.#offline(toolId, name, lock, err);
      }
      deps.push({
        specifier: ref.specifier!,
        module: await this.#node(toolId, dep, lock, p, depth + 1),
      });
    }
    return {
      name: f.name,
      fqdn: f.fqdn,
      source: "registry",
      registry: f.registry || undefined,
      hex: d.hex,
      code,
      scan,
      deps,
      offline: f.offline,
    };
  }

  /** The tool definitions of the cached code with `integrity`, if it is cached. */
  async #definitionsOf(integrity: string) {
    const hex = integrityToHex(integrity);
    const bytes = hex ? (await this.#cachedOrTampered(hex)).bytes : undefined;
    if (!bytes) return undefined;
    try {
      return moduleToolDefinitions(await scanModule(new TextDecoder().decode(bytes)));
    } catch {
      return undefined;
    }
  }

  async #private(ns: string, code: string, origin: string): Promise<LoadedModule> {
    const scan = await this.#scan(code, origin);
    await this.#policy(`${ns}:*`, origin, scan);
    const d = await digest(new TextEncoder().encode(code));
    const name = `private.local.${ns}.module`;
    return {
      name,
      fqdn: `${name}.${d.hex.slice(0, 4)}`,
      source: "private",
      hex: d.hex,
      code,
      scan,
      deps: [],
      offline: false,
    };
  }

  async #scan(code: string, where: string): Promise<ModuleScan> {
    try {
      return await scanModule(code);
    } catch (err) {
      throw new PmlError("MODULE_INVALID", `Cannot load "${where}": ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  async #policy(toolId: string, fqdn: string, scan: ModuleScan): Promise<void> {
    const violations = checkImports(scan.imports, this.#d.client.registries);
    if (!violations.length) return;
    for (const v of violations) {
      await this.#d.audit.write("import_blocked", { tool: toolId, fqdn, ...v });
    }
    const v = violations[0];
    throw new PmlError(
      "IMPORT_BLOCKED",
      `Refused to load "${fqdn}": its ${v.kind} import "${v.specifier}" (line ${v.line}) is not allowed: ${v.reason}`,
      { details: { fqdn, violations } },
    );
  }

  async #commit(p: Pending & { module: LoadedModule }, toolId: string): Promise<LoadedModule> {
    for (const bytes of p.bytes) await this.#d.cache.put(bytes);
    const lock = await this.#d.lockfile();
    for (const name of p.checked) await lock.markChecked(name, this.#now());
    for (const [name, entry] of p.records) {
      await lock.record(name, entry);
      const first = !p.changes.some((c) => c.name === name);
      if (first) {
        await this.#d.audit.write("integrity", {
          tool: toolId,
          event: "recorded",
          name,
          integrity: entry.integrity,
        });
      }
    }
    return p.module;
  }

  /** Re-reads every file of `m` from the cache (re-hashing it) and returns the fresh module. */
  async #reverify(m: LoadedModule): Promise<LoadedModule> {
    const bytes = await this.#d.cache.get(m.hex);
    if (!bytes) {
      throw new PmlError("CACHE_TAMPERED", `The cached module of "${m.fqdn}" disappeared`);
    }
    const deps = [];
    for (const dep of m.deps) {
      deps.push({ specifier: dep.specifier, module: await this.#reverify(dep.module) });
    }
    return { ...m, code: new TextDecoder().decode(bytes), deps };
  }
}

type Fetched = FetchedEntry & { readonly bytes: Uint8Array; readonly offline: boolean };
