/**
 * Resolves what `npx -y <package>[@<spec>]` would run to an exact, pinned npm package: the version
 * npm picks for the spec (a tag, a range or an exact version) and its `sha512` integrity, from the
 * registry's own package document (`npm view`, npm's cache first). The install then verifies the
 * tarball against that integrity like any pinned dependency.
 *
 * @module
 */
import { PmlError } from "../errors.ts";
import { npmEnv } from "./installer.ts";
import type { PinnedPackage } from "./metadata.ts";

/** Turns a package name and a version spec into a pinned package. */
export interface NpmResolver {
  resolve(name: string, spec: string): Promise<PinnedPackage>;
}

/** A package spec of `npx` split into name and version spec (`@a/b@1` → `@a/b`, `1`). */
export function splitPackageSpec(spec: string): { name: string; version: string } {
  const at = spec.indexOf("@", spec.startsWith("@") ? 1 : 0);
  return at < 0
    ? { name: spec, version: "latest" }
    : { name: spec.slice(0, at), version: spec.slice(at + 1) || "latest" };
}

/** {@link NpmResolver} with `npm view <name>@<spec> version dist.integrity --json`. */
export class NpmViewResolver implements NpmResolver {
  readonly #npm: string;
  readonly #env: Record<string, string>;

  constructor(opts: { npm?: string; env?: Readonly<Record<string, string>> } = {}) {
    this.#npm = opts.npm ?? "npm";
    this.#env = npmEnv(opts.env ?? {});
  }

  async resolve(name: string, spec: string): Promise<PinnedPackage> {
    const what = `${name}@${spec}`;
    let out: Deno.CommandOutput;
    try {
      out = await new Deno.Command(this.#npm, {
        args: ["view", what, "version", "dist.integrity", "--json", "--prefer-offline"],
        clearEnv: true,
        env: this.#env,
        stdin: "null",
      }).output();
    } catch (err) {
      throw new PmlError(
        "DEPENDENCY_RESOLVE_FAILED",
        `Cannot resolve ${what}: cannot run "${this.#npm}" (${(err as Error).message})`,
      );
    }
    const text = new TextDecoder().decode(out.stdout).trim();
    if (!out.success || !text) {
      const stderr = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-3).join(" ");
      throw new PmlError(
        "DEPENDENCY_RESOLVE_FAILED",
        `Cannot resolve ${what} with npm: ${
          stderr || "no version matches"
        } (is the name right, and the npm registry reachable?)`,
      );
    }
    // One matching version: an object; several (a range): an array, oldest first.
    const parsed = JSON.parse(text);
    const last = Array.isArray(parsed) ? parsed[parsed.length - 1] : parsed;
    const version = last?.version, integrity = last?.["dist.integrity"];
    if (typeof version !== "string" || typeof integrity !== "string") {
      throw new PmlError(
        "DEPENDENCY_RESOLVE_FAILED",
        `Cannot resolve ${what}: npm gave no version and sha512 integrity (${text.slice(0, 200)})`,
      );
    }
    if (!integrity.startsWith("sha512-")) {
      throw new PmlError(
        "DEPENDENCY_RESOLVE_FAILED",
        `Cannot pin ${name}@${version}: its integrity is not sha512 ("${integrity}")`,
      );
    }
    return { name, version, integrity };
  }
}
