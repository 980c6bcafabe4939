/**
 * The docs name things that must exist: every repository path in backticks or in a link, every
 * `deno task`, every `pml` / `pml-server` command (each one's `--help` runs), and the README's two
 * commands. A doc that names a file, a task or a command that is not there fails here.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";

const ROOT = join(import.meta.dirname!, "..", "..");

function docs(): { file: string; text: string }[] {
  const files = ["README.md", "ARCHITECTURE.md"];
  for (const e of Deno.readDirSync(join(ROOT, "docs"))) {
    if (e.isFile && e.name.endsWith(".md")) files.push(join("docs", e.name));
  }
  return files.map((file) => ({ file, text: Deno.readTextFileSync(join(ROOT, file)) }));
}

/** Code spans and the lines of fenced blocks. */
function codeOf(text: string): string[] {
  const out: string[] = [];
  // Comment lines of a block show a command's output (files it writes), not the repository.
  for (const block of text.matchAll(/```[a-z]*\n([\s\S]*?)```/g)) {
    out.push(...block[1].split("\n").filter((line) => !line.trimStart().startsWith("#")));
  }
  const prose = text.replace(/```[a-z]*\n[\s\S]*?```/g, "");
  for (const span of prose.matchAll(/`([^`\n]+)`/g)) out.push(span[1]);
  return out;
}

/** Where a path may be relative to: the repository, or a package and its sources. */
const BASES = ["", "packages/pml", "packages/pml/src", "packages/server", "packages/server/src"];

/** Paths the docs give as examples of a user's project, not of this repository. */
const EXAMPLES = new Set(["packages/x/.git"]);

/** Paths in code: from one of these folders, up to a character that cannot be in a path. */
const PATH =
  /(?:^|[\s(="'])((?:packages|tests|bench|scripts|registry|docs|bin|\.ci|src)\/[\w./-]*\w)(?![\w*])/g;

Deno.test("docs: every repository path they name exists", () => {
  const missing: string[] = [];
  for (const { file, text } of docs()) {
    const named = new Set<string>();
    for (const code of codeOf(text)) for (const m of code.matchAll(PATH)) named.add(m[1]);
    for (const m of text.matchAll(/\]\(((?!https?:|#|mailto:)[^)#\s]+)(#[^)]*)?\)/g)) {
      named.add(join(file.includes("/") ? "docs" : "", m[1]));
    }
    for (const path of named) {
      // Build outputs are made by a command, not kept in the repository; examples are examples.
      if (path.includes("/dist") || EXAMPLES.has(path)) continue;
      if (!BASES.some((base) => existsSync(join(ROOT, base, path)))) {
        missing.push(`${file}: ${path}`);
      }
    }
  }
  assertEquals(missing, []);
});

Deno.test("docs: every `deno task` they name is a task of deno.json", () => {
  const tasks = Object.keys(JSON.parse(Deno.readTextFileSync(join(ROOT, "deno.json"))).tasks);
  const unknown: string[] = [];
  for (const { file, text } of docs()) {
    for (const code of codeOf(text)) {
      for (const m of code.matchAll(/\bdeno task ([\w-]+)/g)) {
        if (!tasks.includes(m[1])) unknown.push(`${file}: deno task ${m[1]}`);
      }
    }
  }
  assertEquals(unknown, []);
});

/** `pml X` / `pml-server X` commands named in code, with the docs that name them. */
function commands(program: "pml" | "pml-server"): Map<string, string[]> {
  const found = new Map<string, string[]>();
  // A command line or span that starts with the program (`pml x`, `bin/pml x`, `…/bin/pml x`).
  const re = new RegExp(`^\\s*(?:[\\w./~-]*/)?${program} ([a-z][a-z-]*)\\b`);
  for (const { file, text } of docs()) {
    for (const code of codeOf(text)) {
      const m = re.exec(code);
      if (m) found.set(m[1], [...found.get(m[1]) ?? [], file]);
    }
  }
  return found;
}

async function run(bin: string, args: string[]) {
  const out = await new Deno.Command(join(ROOT, "bin", bin), {
    args,
    stdout: "piped",
    stderr: "piped",
    env: { DENO_NO_UPDATE_CHECK: "1" },
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, text: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

Deno.test("docs: every `pml` and `pml-server` command they name exists, and its --help prints usage", async () => {
  const failures: string[] = [];
  for (const program of ["pml", "pml-server"] as const) {
    for (const [command, files] of commands(program)) {
      const help = await run(program, [command, "--help"]);
      if (help.code !== 0 || /unknown command|Unknown option/i.test(help.text)) {
        failures.push(`${program} ${command} (${[...new Set(files)].join(", ")}): ${help.text}`);
      }
    }
  }
  assertEquals(failures, []);
});

Deno.test("docs: the README's front door names the two commands, pml init and where the docs are", () => {
  const readme = Deno.readTextFileSync(join(ROOT, "README.md"));
  for (const line of ["npm ci && bin/pml stdio", "npm test", "pml init", "docs/install.md"]) {
    assert(readme.includes(line), line);
  }
  const scripts = JSON.parse(Deno.readTextFileSync(join(ROOT, "package.json"))).scripts;
  assert(scripts.test, "npm test is a script of package.json");
  // The front door stays short: the benchmark table lives in docs/speed.md.
  assert(!readme.includes("<!-- bench:begin -->"), "the bench table belongs in docs/speed.md");
  assert(readme.split("\n").length < 260, `README has ${readme.split("\n").length} lines`);
});
