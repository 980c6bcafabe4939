// Adds the lockfile entries of Deno's binaries for other platforms.
//
// The npm registry this project installs from serves only the current platform's `@deno/*`
// package, so `npm install` writes a package-lock.json without the others, and `npm ci` then
// refuses it ("Missing: @deno/darwin-arm64@ from lock file"). The entries added here carry version,
// os and cpu only; npm skips them on other platforms without fetching them.
// Run after every `npm install` that rewrites the lockfile: `node scripts/complete-lockfile.mjs`.
import { readFileSync, writeFileSync } from "node:fs";

const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const pkgs = lock.packages;
const deno = pkgs["node_modules/deno"];
let added = 0;
for (const [name, version] of Object.entries(deno?.optionalDependencies ?? {})) {
  const key = `node_modules/${name}`;
  if (pkgs[key]) continue;
  const [os, cpu, libc] = name.replace("@deno/", "").split("-");
  pkgs[key] = {
    version,
    cpu: [cpu],
    ...(libc ? { libc: [libc] } : {}),
    license: "MIT",
    optional: true,
    os: [os],
  };
  added++;
}
lock.packages = Object.fromEntries(
  Object.entries(pkgs).sort((
    [a],
    [b],
  ) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0)),
);
writeFileSync(path, JSON.stringify(lock, null, 2) + "\n");
console.log(`complete-lockfile: added ${added} entries`);
