/**
 * `deno task bench`: runs every `bench/*_bench.ts` in turn, each in its own process, prints their
 * reports, then one table of the figures they report (`figure()` in `_stats.ts`), each with its
 * anchor and target. `deno task bench stdio deps` runs only the benches whose names contain a word.
 * `--write` (older name `--readme`) also writes the table into docs/speed.md, between the
 * `bench:begin`/`bench:end` markers (rows of benches not run this time are kept).
 */
import { join } from "node:path";
import { type Figure, FIGURE_PREFIX } from "./_stats.ts";

const dir = import.meta.dirname!;
const WRITE_FLAGS = ["--write", "--readme"];
const writeTable = Deno.args.some((a) => WRITE_FLAGS.includes(a));
const filters = Deno.args.filter((a) => !WRITE_FLAGS.includes(a));
const files = [...Deno.readDirSync(dir)]
  .map((e) => e.name)
  .filter((n) => n.endsWith("_bench.ts"))
  .filter((n) => filters.length === 0 || filters.some((f) => n.includes(f)))
  .sort();

/** Runs one bench, echoing its output, and returns the figures it reported. */
async function run(file: string): Promise<{ code: number; figures: Figure[] }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", join(dir, file)],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const figures: Figure[] = [];
  let rest = "";
  const decoder = new TextDecoder();
  const take = (line: string) => {
    if (line.startsWith(FIGURE_PREFIX)) figures.push(JSON.parse(line.slice(FIGURE_PREFIX.length)));
    else console.log(line);
  };
  for await (const chunk of child.stdout) {
    const lines = (rest + decoder.decode(chunk, { stream: true })).split("\n");
    rest = lines.pop()!;
    lines.forEach(take);
  }
  if (rest) take(rest);
  return { code: (await child.status).code, figures };
}

let failed = 0;
const figures: Figure[] = [];
for (const file of files) {
  console.log(`\n=== ${file} ===`);
  const result = await run(file);
  figures.push(...result.figures);
  if (result.code !== 0) {
    failed++;
    console.log(`(${file} exited with code ${result.code})`);
  }
}

const table = markdownTable(figures);
console.log(`\n=== figures (${new Date().toISOString().slice(0, 10)}) ===\n${table}`);
if (writeTable) {
  const page = join(dir, "..", "docs", "speed.md");
  Deno.writeTextFileSync(page, withFigures(Deno.readTextFileSync(page), figures));
  console.log("docs/speed.md: figures written");
}
Deno.exit(failed ? 1 : 0);

function markdownTable(rows: Figure[]): string {
  const cells = [...rows].sort((a, b) => a.id.localeCompare(b.id)).map((f) => [
    f.what,
    f.now,
    f.target,
    f.met === undefined ? "—" : f.met ? "met" : "missed",
    `\`deno task bench ${f.bench}\``,
  ]);
  const head = ["figure", "measured (anchor)", "target", "", "command"];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => `| ${c.map((x, i) => x.padEnd(widths[i])).join(" | ")} |`;
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...cells.map(line)].join("\n");
}

/**
 * docs/speed.md with its figures table replaced: the rows of `rows` and, for benches not run, the
 * rows it had (kept as JSON in a comment after the table, so that they can be redrawn).
 */
function withFigures(page: string, rows: Figure[]): string {
  const begin = "<!-- bench:begin -->";
  const end = "<!-- bench:end -->";
  // The markers on lines of their own (the page also names them in its prose).
  const from = page.indexOf(`\n${begin}\n`) + 1;
  const to = page.indexOf(`\n${end}\n`) + 1;
  if (from <= 0 || to < from) throw new Error(`docs/speed.md has no ${begin} … ${end} block`);
  const old = page.slice(from, to).match(/<!-- figures (.*) -->/)?.[1];
  const ran = new Set(rows.map((f) => f.bench));
  const kept = (old ? JSON.parse(old) as Figure[] : []).filter((f) => !ran.has(f.bench));
  const all = [...kept, ...rows].sort((a, b) => a.id.localeCompare(b.id));
  const block = `${begin}\n\n${markdownTable(all)}\n\n<!-- figures ${JSON.stringify(all)} -->\n`;
  return page.slice(0, from) + block + page.slice(to);
}
