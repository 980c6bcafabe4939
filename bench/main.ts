/**
 * `deno task bench`: runs every `bench/*_bench.ts` in turn, each in its own process, and prints
 * their reports. `deno task bench stdio deps` runs only the benches whose names contain a word.
 */
import { join } from "node:path";

const dir = import.meta.dirname!;
const filters = Deno.args;
const files = [...Deno.readDirSync(dir)]
  .map((e) => e.name)
  .filter((n) => n.endsWith("_bench.ts"))
  .filter((n) => filters.length === 0 || filters.some((f) => n.includes(f)))
  .sort();

let failed = 0;
for (const file of files) {
  console.log(`\n=== ${file} ===`);
  const { code } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", join(dir, file)],
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (code !== 0) {
    failed++;
    console.log(`(${file} exited with code ${code})`);
  }
}
Deno.exit(failed ? 1 : 0);
