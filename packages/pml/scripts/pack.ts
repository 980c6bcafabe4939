/**
 * `deno task pack [destination]`: the npm package of the client, `@casys/pml`, built and packed
 * with `npm pack`. What it holds:
 *
 * - `dist/`: the bundled form (`scripts/bundle.ts`: `pml.js` and the sandbox entries);
 * - `registry/mcp/`: the catalogue of stdio MCPs that PML knows without a registry (the same
 *   JSON values as the repository's files, without their indentation);
 * - `bin/pml`: the launcher (`npm/pml`), which finds the Deno installed with the package;
 * - `package.json`: the npm packages the bundle imports, and `deno`, at the versions the
 *   repository pins in its own `package.json`.
 *
 * The tarball is written to `destination` (default: the current folder); its path and sizes are
 * printed, and returned by {@link pack}. `deno task size` measures this tarball.
 */
import { basename, join, relative, resolve } from "node:path";
import { bundle } from "./bundle.ts";

const PKG = resolve(import.meta.dirname!, "..");
const ROOT = join(PKG, "..", "..");

/** npm packages the bundle imports (or runs on); their versions come from the root package.json. */
const RUNTIME_DEPENDENCIES = [
  "@babel/parser",
  "@modelcontextprotocol/sdk",
  "deno",
  "dotenv",
  "smol-toml",
  "zod",
];

/** What `npm pack` reports of the tarball. */
export interface PackedPackage {
  /** Absolute path of the `.tgz`. */
  readonly tarball: string;
  /** Bytes of the tarball (gzipped). */
  readonly size: number;
  /** Bytes of the files unpacked. */
  readonly unpackedSize: number;
  readonly files: readonly string[];
}

/** Builds `@casys/pml` in a staging folder and packs it into `destination`. */
export async function pack(destination: string = Deno.cwd()): Promise<PackedPackage> {
  const rootPkg = JSON.parse(Deno.readTextFileSync(join(ROOT, "package.json")));
  const denoJson = JSON.parse(Deno.readTextFileSync(join(PKG, "deno.json")));
  const staging = Deno.makeTempDirSync({ prefix: "pml-pack-" });
  // The bundle is built where paths.ts expects a repository bundle, then moved to `dist/`.
  const built = Deno.makeTempDirSync({ dir: PKG, prefix: ".bundle-pack-" });
  try {
    await bundle(built);
    Deno.renameSync(built, join(staging, "dist"));
    Deno.mkdirSync(join(staging, "registry", "mcp"), { recursive: true });
    for (const e of Deno.readDirSync(join(ROOT, "registry", "mcp"))) {
      if (e.isFile && e.name.endsWith(".json")) {
        // Without the indentation: the client only `JSON.parse`s these files.
        const value = JSON.parse(Deno.readTextFileSync(join(ROOT, "registry", "mcp", e.name)));
        Deno.writeTextFileSync(join(staging, "registry", "mcp", e.name), JSON.stringify(value));
      }
    }
    Deno.mkdirSync(join(staging, "bin"));
    Deno.copyFileSync(join(PKG, "npm", "pml"), join(staging, "bin", "pml"));
    Deno.chmodSync(join(staging, "bin", "pml"), 0o755);
    const dependencies = Object.fromEntries(
      RUNTIME_DEPENDENCIES.map((name) => {
        const version = rootPkg.dependencies?.[name];
        if (!version) throw new Error(`pack: the root package.json does not pin "${name}"`);
        return [name, version];
      }),
    );
    const manifest = {
      name: denoJson.name,
      version: denoJson.version,
      description: "PML: one MCP gateway for coding agents (the `pml` client CLI).",
      type: "module",
      bin: { pml: "bin/pml" },
      files: ["bin/", "dist/", "registry/"],
      engines: { node: ">=20" },
      os: ["linux", "darwin"],
      dependencies,
    };
    Deno.writeTextFileSync(join(staging, "package.json"), JSON.stringify(manifest, null, 2) + "\n");
    const dest = resolve(destination);
    const out = await new Deno.Command("npm", {
      args: ["pack", "--json", "--pack-destination", dest],
      cwd: staging,
      stdout: "piped",
      stderr: "piped",
      env: { npm_config_update_notifier: "false", npm_config_fund: "false" },
    }).output();
    if (!out.success) {
      throw new Error(`pack: npm pack failed: ${new TextDecoder().decode(out.stderr)}`);
    }
    const [report] = JSON.parse(new TextDecoder().decode(out.stdout));
    return {
      tarball: join(dest, basename(report.filename)),
      size: report.size,
      unpackedSize: report.unpackedSize,
      files: report.files.map((f: { path: string }) => f.path),
    };
  } finally {
    Deno.removeSync(staging, { recursive: true });
    try {
      Deno.removeSync(built, { recursive: true });
    } catch { /* moved */ }
  }
}

/**
 * Packs `@casys/pml` and installs it with `npm install` into `project` (a fresh folder), as a user
 * would; its dependencies come from the npm cache first (`--prefer-offline`). Returns what was
 * packed, the folder of the installed package and its `pml` command (`node_modules/.bin/pml`).
 */
export async function installPacked(
  project: string,
): Promise<{ packed: PackedPackage; pkg: string; bin: string }> {
  const packed = await pack(project);
  Deno.writeTextFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "pml-install", private: true, allowScripts: { deno: true } }),
  );
  const install = await new Deno.Command("npm", {
    args: ["install", "--prefer-offline", "--no-audit", "--no-fund", packed.tarball],
    cwd: project,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!install.success) {
    throw new Error(
      `pack: npm install of ${packed.tarball} failed: ${new TextDecoder().decode(install.stderr)}`,
    );
  }
  return {
    packed,
    pkg: join(project, "node_modules", "@casys", "pml"),
    bin: join(project, "node_modules", ".bin", "pml"),
  };
}

if (import.meta.main) {
  const packed = await pack(Deno.args[0]);
  console.log(
    `${relative(Deno.cwd(), packed.tarball) || packed.tarball}: ${packed.files.length} files, ${
      (packed.size / 1024).toFixed(1)
    } KiB packed, ${(packed.unpackedSize / 1024).toFixed(1)} KiB unpacked`,
  );
}
