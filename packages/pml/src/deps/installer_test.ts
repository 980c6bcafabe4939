/**
 * `NpmInstaller` with the real npm. A fresh machine has an empty npm cache: `npm ci` never fetches
 * the metadata of the packages PML installs later, so an install must be able to fetch them (the
 * default, `--prefer-offline`) and still verify the pinned sha512 integrity.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../testing/assert.ts";
import { catalogueEntry } from "../targets/stdio/_testing.ts";
import { PmlError } from "../errors.ts";
import { NpmInstaller } from "./installer.ts";
import type { PinnedPackage } from "./metadata.ts";

const MEMORY = catalogueEntry("memory").package as PinnedPackage;

/** A temp root with an empty npm cache and an empty HOME, as on a machine that never ran npm. */
async function freshMachine() {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "pml-installer-" }));
  const cache = join(root, "npm-cache");
  const home = join(root, "home");
  await Deno.mkdir(cache);
  await Deno.mkdir(home);
  return {
    root,
    cache,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: home, npm_config_cache: cache },
    async [Symbol.asyncDispose]() {
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
}

const entries = (dir: string) => [...Deno.readDirSync(dir)].map((e) => e.name).sort();

Deno.test("fresh machine: with an empty npm cache, --offline fails clearly and the default install fetches and verifies", async () => {
  await using m = await freshMachine();
  const deps = join(m.root, "deps");
  const dir = join(deps, `memory@${MEMORY.version}`);

  // What the tests did before: --offline needs npm metadata that nothing has cached yet.
  const offline = new NpmInstaller({ offline: true, env: m.env });
  const err = await assertRejects(() => offline.install(MEMORY, dir), PmlError);
  assertEquals((err as PmlError).code, "DEPENDENCY_NOT_CACHED");
  // What is missing (this package, in this cache) and what to do, not npm's ENOTCACHED text.
  assertStringIncludes(
    err.message,
    `Cannot install ${MEMORY.name}@${MEMORY.version}: npm is offline`,
  );
  assertStringIncludes(err.message, `its cache (${m.cache}) does not hold the package`);
  assertStringIncludes(err.message, `run "npm cache add ${MEMORY.name}@${MEMORY.version}"`);
  assert(!err.message.includes("only-if-cached"), err.message);
  assert(!err.message.includes("npm error"), err.message);
  assertEquals((err as PmlError).details?.npmCode, "ENOTCACHED");
  assertEquals(entries(deps), [], "no folder and no staging folder is left");

  // npm's own offline setting (from the environment) gets the same answer.
  const npmOffline = new NpmInstaller({ env: { ...m.env, npm_config_offline: "true" } });
  const viaConfig = await assertRejects(() => npmOffline.install(MEMORY, dir), PmlError);
  assertEquals((viaConfig as PmlError).code, "DEPENDENCY_NOT_CACHED");
  assertStringIncludes(viaConfig.message, "npm's offline setting");
  assertEquals(entries(deps), []);

  // As users install: npm fetches what its cache lacks, and the pinned integrity is checked.
  const installed = await new NpmInstaller({ env: m.env }).install(MEMORY, dir);
  assertEquals(installed.integrity, MEMORY.integrity);
  assert(MEMORY.integrity?.startsWith("sha512-"));
  assert((await Deno.stat(installed.bin)).isFile, installed.bin);
  assertEquals(entries(deps), [`memory@${MEMORY.version}`]);
  assert(entries(m.cache).includes("_cacache"), "npm used the test's own cache");
  assertEquals(await new NpmInstaller({ env: m.env }).inspect(MEMORY, dir), installed);

  // Once fetched, the offline installer works from that cache: the cache was the only difference.
  const again = await offline.install(MEMORY, join(deps, "again"));
  assertEquals(again.integrity, MEMORY.integrity);

  // A pin that differs from what npm verified is refused, whatever the cache holds.
  const forged = { ...MEMORY, integrity: "sha512-" + "A".repeat(86) + "==" };
  const bad = await assertRejects(
    () => new NpmInstaller({ env: m.env }).install(forged, join(deps, "forged")),
    PmlError,
    `expected ${forged.integrity}, got ${MEMORY.integrity}`,
  );
  assertEquals((bad as PmlError).code, "INTEGRITY_MISMATCH");
  assertEquals(entries(deps), ["again", `memory@${MEMORY.version}`]);
});

Deno.test("an unreachable npm registry with an empty cache says so and what to do", async () => {
  await using m = await freshMachine();
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close(); // nothing listens there any more: connections are refused
  const env = {
    ...m.env,
    npm_config_registry: `http://127.0.0.1:${port}/`,
    npm_config_fetch_retries: "0",
  };
  const deps = join(m.root, "deps");
  const err = await assertRejects(
    () => new NpmInstaller({ env }).install(MEMORY, join(deps, "memory")),
    PmlError,
  );
  assertEquals((err as PmlError).code, "DEPENDENCY_REGISTRY_UNREACHABLE");
  assertStringIncludes(err.message, "npm cannot reach its registry (ECONNREFUSED");
  assertStringIncludes(err.message, `127.0.0.1:${port}`);
  assertStringIncludes(err.message, `its cache (${m.cache}) does not hold the package`);
  assertStringIncludes(err.message, "HTTPS_PROXY");
  assert(!err.message.includes("minipass-fetch"), err.message);
  assertEquals(entries(deps), []);
});

Deno.test("npm gets only what it needs from the environment: no PML or BYOK keys", async () => {
  await using m = await freshMachine();
  const dump = join(m.root, "env.txt");
  const npm = join(m.root, "fake-npm");
  await Deno.writeTextFile(npm, `#!/bin/sh\nenv > '${dump}'\necho 'npm ERR! boom' >&2\nexit 3\n`);
  await Deno.chmod(npm, 0o755);
  const env = {
    ...m.env,
    PML_API_KEY: "pml-secret",
    TAVILY_API_KEY: "tvly-secret",
    HTTPS_PROXY: "http://127.0.0.1:9",
  };
  const err = await assertRejects(
    () => new NpmInstaller({ npm, env }).install(MEMORY, join(m.root, "deps", "memory")),
    PmlError,
    "npm install exited with code 3",
  );
  assertStringIncludes(err.message, "npm ERR! boom");
  const seen = await Deno.readTextFile(dump);
  assert(!seen.includes("secret"), seen);
  assertStringIncludes(seen, `npm_config_cache=${m.cache}`);
  assertStringIncludes(seen, "HTTPS_PROXY=http://127.0.0.1:9");
});

Deno.test("an npm that cannot be run is a clear error naming it", async () => {
  await using m = await freshMachine();
  const npm = join(m.root, "no-such-npm");
  const err = await assertRejects(
    () => new NpmInstaller({ npm, env: m.env }).install(MEMORY, join(m.root, "deps", "memory")),
    PmlError,
    `cannot run "${npm}"`,
  );
  assertEquals((err as PmlError).code, "DEPENDENCY_INSTALL_FAILED");
  assertEquals(entries(join(m.root, "deps")), []);
});
