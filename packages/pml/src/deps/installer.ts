import { join } from "node:path";
import { PmlError } from "../errors.ts";
import type { PinnedPackage } from "./metadata.ts";
import { npmInstallFailure } from "./_npm_failure.ts";

/** An npm package installed and verified in its own folder. */
export interface InstalledPackage {
  /** The install folder (holds `package.json`, `package-lock.json`, `deno.json`, `node_modules/`). */
  readonly dir: string;
  /** `<dir>/node_modules/<name>`. */
  readonly packageDir: string;
  /** The integrity npm verified for the tarball it extracted (from the install's lockfile). */
  readonly integrity: string;
  /** Absolute path of the package's bin script (the MCP server entry). */
  readonly bin: string;
}

/** Reports install progress (step, total, message). */
export type InstallProgress = (step: number, total: number, message: string) => Promise<void>;

/**
 * Installs pinned npm packages. The real one is {@link NpmInstaller}; tests may pass another one,
 * but every implementation must refuse a package whose integrity differs from `pkg.integrity`.
 */
export interface Installer {
  /** Installs `pkg` into `dir` (replacing what is there) and verifies its integrity. */
  install(pkg: PinnedPackage, dir: string, progress?: InstallProgress): Promise<InstalledPackage>;
  /** Checks an existing installation in `dir`: `undefined` when absent, an error when tampered. */
  inspect(pkg: PinnedPackage, dir: string): Promise<InstalledPackage | undefined>;
}

/**
 * Throws `INTEGRITY_MISMATCH` unless `actual` equals the pinned integrity (for a package without
 * one, unless npm recorded none). The message shows both values.
 *
 * @example
 * ```ts
 * assertIntegrity({ name: "x", version: "1.0.0", integrity: "sha512-a" }, "sha512-a"); // ok
 * ```
 */
export function assertIntegrity(pkg: PinnedPackage, actual: string | undefined): void {
  if (actual === pkg.integrity) return;
  // No pin (a development private_mcps entry): npm's own check is the only one; one is required.
  if (pkg.integrity === undefined && actual !== undefined) return;
  throw new PmlError(
    "INTEGRITY_MISMATCH",
    `Integrity check failed for ${pkg.name}@${pkg.version}: expected ${pkg.integrity}, got ${
      actual ?? "(no integrity recorded by npm)"
    }; the server was not run`,
    { details: { package: pkg.name, version: pkg.version, expected: pkg.integrity, actual } },
  );
}

const STEPS = 3;

/**
 * Installs with npm into a private folder: a `package.json` that pins exactly `name@version`, then
 * `npm install --ignore-scripts` in a staging folder. npm checks the tarball it extracts against the
 * integrity of the registry's package document (and its cache against its content hash), and records
 * that integrity in `package-lock.json`; PML compares it with the pinned integrity from the metadata
 * and only then moves the staging folder into place. A mismatch leaves nothing installed.
 *
 * `offline: true` uses only npm's local cache (`--offline`); otherwise `--prefer-offline`.
 */
export class NpmInstaller implements Installer {
  readonly #npm: string;
  readonly #offline: boolean;
  readonly #env: Record<string, string>;

  constructor(
    opts: { npm?: string; offline?: boolean; env?: Readonly<Record<string, string>> } = {},
  ) {
    this.#npm = opts.npm ?? "npm";
    this.#offline = opts.offline ?? false;
    this.#env = npmEnv(opts.env ?? {});
  }

  async install(
    pkg: PinnedPackage,
    dir: string,
    progress?: InstallProgress,
  ): Promise<InstalledPackage> {
    const staging = `${dir}.staging-${crypto.randomUUID().slice(0, 8)}`;
    await Deno.mkdir(staging, { recursive: true });
    try {
      await Deno.writeTextFile(
        join(staging, "package.json"),
        JSON.stringify(
          { name: "pml-dependency", private: true, dependencies: { [pkg.name]: pkg.version } },
          null,
          2,
        ),
      );
      // Lets Deno resolve the package's imports from this node_modules (and nothing else).
      await Deno.writeTextFile(
        join(staging, "deno.json"),
        `{ "nodeModulesDir": "manual", "lock": false }\n`,
      );
      await progress?.(1, STEPS, `Installing ${pkg.name}@${pkg.version} with npm`);
      await this.#runNpm(pkg, staging);
      await progress?.(2, STEPS, `Verifying the integrity of ${pkg.name}@${pkg.version}`);
      const installed = await readInstall(pkg, staging);
      assertIntegrity(pkg, installed.integrity);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      await Deno.rename(staging, dir);
      await progress?.(
        3,
        STEPS,
        `Installed ${pkg.name}@${pkg.version} (${
          pkg.integrity
            ? `${pkg.integrity.slice(0, 19)}…`
            : `UNPINNED, npm gave ${installed.integrity}`
        })`,
      );
      return await readInstall(pkg, dir);
    } finally {
      await Deno.remove(staging, { recursive: true }).catch(() => {});
    }
  }

  async inspect(pkg: PinnedPackage, dir: string): Promise<InstalledPackage | undefined> {
    try {
      await Deno.stat(join(dir, "package-lock.json"));
    } catch {
      return undefined;
    }
    const installed = await readInstall(pkg, dir);
    assertIntegrity(pkg, installed.integrity);
    return installed;
  }

  async #runNpm(pkg: PinnedPackage, cwd: string): Promise<void> {
    const args = [
      "install",
      this.#offline ? "--offline" : "--prefer-offline",
      "--ignore-scripts",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
    ];
    let out: Deno.CommandOutput;
    try {
      out = await new Deno.Command(this.#npm, {
        args,
        cwd,
        clearEnv: true,
        env: this.#env,
        stdin: "null",
      })
        .output();
    } catch (err) {
      throw new PmlError(
        "DEPENDENCY_INSTALL_FAILED",
        `Cannot install ${pkg.name}@${pkg.version}: cannot run "${this.#npm}" (${
          (err as Error).message
        })`,
      );
    }
    if (!out.success) {
      throw npmInstallFailure(
        pkg,
        { code: out.code, stderr: new TextDecoder().decode(out.stderr) },
        { offline: this.#offline, env: this.#env },
      );
    }
  }
}

/** Reads what npm installed in `dir`: integrity from its lockfile, bin from the package.json. */
async function readInstall(pkg: PinnedPackage, dir: string): Promise<InstalledPackage> {
  const lock = JSON.parse(await Deno.readTextFile(join(dir, "package-lock.json")));
  const entry = lock?.packages?.[`node_modules/${pkg.name}`];
  if (!entry || entry.version !== pkg.version) {
    throw new PmlError(
      "DEPENDENCY_INSTALL_FAILED",
      `npm installed ${pkg.name}@${
        entry?.version ?? "(nothing)"
      } in ${dir}, not the pinned version ${pkg.version}`,
    );
  }
  const packageDir = join(dir, "node_modules", ...pkg.name.split("/"));
  const manifest = JSON.parse(await Deno.readTextFile(join(packageDir, "package.json")));
  const bin = typeof manifest.bin === "string"
    ? manifest.bin
    : pickBin(pkg.name, manifest.bin ?? {});
  if (!bin) {
    throw new PmlError(
      "DEPENDENCY_INSTALL_FAILED",
      `${pkg.name}@${pkg.version} declares no "bin" to run`,
    );
  }
  return { dir, packageDir, integrity: entry.integrity, bin: join(packageDir, bin) };
}

function pickBin(name: string, bins: Record<string, string>): string | undefined {
  const entries = Object.entries(bins);
  if (entries.length === 1) return entries[0][1];
  const short = name.split("/").pop()!;
  return bins[short] ?? bins[`mcp-${short}`] ?? entries[0]?.[1];
}

/** npm's environment: what it needs to find its cache and config, none of the user's secrets. */
export function npmEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  const keep = (k: string) =>
    [
      "PATH",
      "HOME",
      "USERPROFILE",
      "APPDATA",
      "SYSTEMROOT",
      "TMPDIR",
      "HTTP_PROXY",
      "HTTPS_PROXY",
      "NO_PROXY",
    ]
      .includes(k.toUpperCase()) || /^npm_config_/i.test(k);
  return Object.fromEntries(Object.entries(env).filter(([k]) => keep(k)));
}
