/**
 * Content-addressed cache of verified registry bytes: `<pmlHome>/registry/modules/<sha256 hex>`.
 *
 * A file's name is the SHA-256 of its content, so projects share one copy and a read re-hashes
 * the bytes: a file changed on disk is reported (`CACHE_TAMPERED`) and removed, never run.
 *
 * @module
 */
import { join } from "node:path";
import { writeFileAtomic } from "../config/write_json.ts";
import { PmlError } from "../errors.ts";
import { type Digest, digest } from "./integrity.ts";

/** See the module documentation. */
export class ModuleCache {
  readonly dir: string;

  constructor(pmlHome: string) {
    this.dir = join(pmlHome, "registry", "modules");
  }

  /** Path of the bytes with digest `hex`. */
  pathOf(hex: string): string {
    if (!/^[0-9a-f]{64}$/.test(hex)) throw new TypeError(`Invalid sha256 hex "${hex}"`);
    return join(this.dir, hex);
  }

  /** Stores `bytes` (atomically) and returns their digest. */
  async put(bytes: Uint8Array): Promise<Digest> {
    const d = await digest(bytes);
    const path = this.pathOf(d.hex);
    await writeFileAtomic(path, bytes);
    return d;
  }

  /**
   * The bytes with digest `hex`, re-hashed; `undefined` when not cached.
   *
   * @throws {PmlError} `CACHE_TAMPERED` when the file's content no longer has that digest (the
   * file is removed).
   */
  async get(hex: string): Promise<Uint8Array | undefined> {
    const path = this.pathOf(hex);
    let bytes: Uint8Array;
    try {
      bytes = await Deno.readFile(path);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return undefined;
      throw err;
    }
    const actual = await digest(bytes);
    if (actual.hex !== hex) {
      await Deno.remove(path).catch(() => {});
      throw new PmlError(
        "CACHE_TAMPERED",
        `The cached module "${path}" was changed on disk (sha256 ${
          actual.hex.slice(0, 12)
        }…, expected ${hex.slice(0, 12)}…); it was removed and will not run`,
        { details: { path, expected: hex, actual: actual.hex } },
      );
    }
    return bytes;
  }
}
