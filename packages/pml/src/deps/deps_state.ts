import { join } from "node:path";
import { readJsonObject, writeFileAtomic } from "../config/write_json.ts";

/** One installed (or, for raw commands, approved) dependency in `.pml/deps.json`. */
export interface InstalledDep {
  /** `deno`: npm package installed and verified, run under Deno; `command`: declared raw command. */
  readonly mode: "deno" | "command";
  readonly package?: string;
  readonly version?: string;
  /** The SRI integrity npm verified for the installed tarball (`deno` mode). */
  readonly integrity?: string;
  /** Install folder, relative to the workspace (`deno` mode). */
  readonly dir?: string;
  /** The approved command line (`command` mode). */
  readonly command?: readonly string[];
  readonly installedAt: string;
}

interface DepsFile {
  version: 1;
  installed: Record<string, InstalledDep>;
}

/**
 * `.pml/deps.json` (DESIGN §4): what was installed, at which version, with which verified integrity,
 * and when. Every write is atomic (temp file + rename) and writes are serialised.
 */
export class DepsState {
  readonly path: string;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(workspace: string) {
    this.path = join(workspace, ".pml", "deps.json");
  }

  /** All recorded dependencies, by server name. */
  async all(): Promise<Record<string, InstalledDep>> {
    const file = await readJsonObject(this.path);
    const installed = file?.installed;
    return installed && typeof installed === "object"
      ? installed as Record<string, InstalledDep>
      : {};
  }

  async get(server: string): Promise<InstalledDep | undefined> {
    const all = await this.all();
    return Object.hasOwn(all, server) ? all[server] : undefined;
  }

  /** Records `server` (replacing an older record), keeping every other entry. */
  record(server: string, dep: InstalledDep): Promise<void> {
    return this.#update((installed) => ({ ...installed, [server]: dep }));
  }

  /** Drops the record of `server` (e.g. when its installation turned out to be tampered with). */
  async forget(server: string): Promise<void> {
    if (!(await this.get(server))) return;
    return await this.#update((installed) => {
      const { [server]: _, ...rest } = installed;
      return rest;
    });
  }

  #update(
    change: (installed: Record<string, InstalledDep>) => Record<string, InstalledDep>,
  ): Promise<void> {
    const next = this.#chain.then(async () => {
      const file: DepsFile = { version: 1, installed: change(await this.all()) };
      await writeFileAtomic(this.path, JSON.stringify(file, null, 2) + "\n");
    });
    this.#chain = next.catch(() => {});
    return next;
  }
}
