import { join } from "node:path";
import { assertEquals, assertThrows } from "../testing/assert.ts";
import type { PmlError } from "../errors.ts";
import { tempWorkspace } from "../testing/workspace.ts";
import { loadConfig } from "./config.ts";
import { byokValues } from "./dotenv.ts";

const DOTENV = [
  "\uFEFF# keys for this project",
  "TAVILY_API_KEY=tvly-from-file",
  "export EXA_API_KEY = 'exa single # not a comment'",
  'GITHUB_TOKEN="ghp line1\\nline2"  # trailing comment',
  "SLACK_BOT_TOKEN=xoxb-plain # a comment",
  "UNLISTED_SECRET=never-read",
  "EMPTY=",
  "",
].join("\r\n");

Deno.test("dotenv: the listed names come from .env (dotenv syntax: export, quotes, comments, CRLF, BOM)", async () => {
  await using ws = tempWorkspace();
  ws.write(".env", DOTENV);
  const names = ["TAVILY_API_KEY", "EXA_API_KEY", "GITHUB_TOKEN", "SLACK_BOT_TOKEN", "EMPTY"];
  assertEquals(byokValues(names, {}, ws.dir), {
    TAVILY_API_KEY: "tvly-from-file",
    EXA_API_KEY: "exa single # not a comment",
    GITHUB_TOKEN: "ghp line1\nline2",
    SLACK_BOT_TOKEN: "xoxb-plain",
  });
});

Deno.test("dotenv: the environment wins, and no unlisted name is kept", async () => {
  await using ws = tempWorkspace();
  ws.write(".env", DOTENV);
  const got = byokValues(["TAVILY_API_KEY", "EXA_API_KEY"], {
    TAVILY_API_KEY: "tvly-from-env",
    UNLISTED_SECRET: "env-secret",
  }, ws.dir);
  assertEquals(got, { TAVILY_API_KEY: "tvly-from-env", EXA_API_KEY: "exa single # not a comment" });
});

Deno.test("dotenv: no names, no .env, or a .env that cannot be read", async () => {
  await using ws = tempWorkspace();
  assertEquals(byokValues(["TAVILY_API_KEY"], {}, ws.dir), {});
  Deno.mkdirSync(join(ws.dir, ".env"));
  assertEquals(byokValues([], {}, ws.dir), {}, "not read when nothing is listed");
  const err = assertThrows(() => byokValues(["TAVILY_API_KEY"], {}, ws.dir));
  assertEquals((err as PmlError).code, "CONFIG_INVALID");
});

Deno.test("config: byokValues holds only the names .pml.json lists, from the environment or .env", async () => {
  await using ws = tempWorkspace({ env: ["TAVILY_API_KEY", "GITHUB_TOKEN"] });
  ws.write(".env", DOTENV);
  const c = loadConfig({
    env: { PML_WORKSPACE: ws.dir, GITHUB_TOKEN: "ghp-env" },
    cwd: ws.dir,
    home: ws.home,
  });
  assertEquals(c.byokValues, { TAVILY_API_KEY: "tvly-from-file", GITHUB_TOKEN: "ghp-env" });
  assertEquals(c.env.TAVILY_API_KEY, undefined, "the environment snapshot is not changed");
});
