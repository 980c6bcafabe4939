/**
 * Real clients read what `pml init --client` writes: Gemini CLI connects to pml through
 * `.gemini/settings.json` (`gemini mcp list`) and passes it the BYOK variables the entry names,
 * and Codex parses the `[mcp_servers.pml]` table (`codex mcp get pml`). Private HOME, proxies on
 * the egress trap.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../../packages/pml/src/testing/workspace.ts";
import { PML_BIN } from "../_spawn.ts";
import { startEgressTrap } from "./_egress_trap.ts";

const BIN = join(import.meta.dirname!, "..", "..", "..", "node_modules", ".bin");

/** PATH without any other `pml`, so that init names this checkout's launcher. */
function pathWithoutPml(): string {
  return (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":")
    .filter((d) => !existsSync(join(d, "pml"))).join(":");
}

async function run(cmd: string, args: string[], cwd: string, env: Record<string, string>) {
  const out = await new Deno.Command(cmd, {
    args,
    cwd,
    env: { PATH: pathWithoutPml(), DENO_NO_UPDATE_CHECK: "1", ...env },
    clearEnv: true,
    stdin: "null",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, out: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

Deno.test("gemini mcp list: the .gemini/settings.json of `pml init --client gemini` connects", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace();
  const init = await run(PML_BIN, ["init", "--yes", "--client", "gemini"], ws.dir, {
    HOME: ws.home,
  });
  assertEquals(init.code, 0, init.out);
  const list = await run(join(BIN, "gemini"), ["mcp", "list"], ws.dir, {
    HOME: ws.home,
    GEMINI_API_KEY: "scripted",
    GEMINI_CLI_TRUST_WORKSPACE: "true",
    ...trap.env,
  });
  assertEquals(list.code, 0, list.out);
  assertStringIncludes(list.out, "pml:");
  assertStringIncludes(list.out, "Connected", list.out);
  assertEquals(trap.attempts, []);
});

Deno.test("codex mcp get: the table of `pml init --client codex` is read with its env_vars", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace();
  const init = await run(PML_BIN, ["init", "--yes", "--client", "codex"], ws.dir, {
    HOME: ws.home,
  });
  assertEquals(init.code, 0, init.out);
  assertStringIncludes(init.out, "[mcp_servers.pml]", "the table is printed to paste");
  const codexHome = join(ws.home, "codex");
  Deno.mkdirSync(codexHome);
  Deno.copyFileSync(join(ws.dir, ".codex", "config.toml"), join(codexHome, "config.toml"));
  const get = await run(join(BIN, "codex"), ["mcp", "get", "pml"], ws.dir, {
    HOME: ws.home,
    CODEX_HOME: codexHome,
    ...trap.env,
  });
  assertEquals(get.code, 0, get.out);
  assertStringIncludes(get.out, `command: ${PML_BIN}`);
  assertStringIncludes(get.out, "TAVILY_API_KEY=*****");
  assert(!get.out.includes("workspaceFolder"));
  assertEquals(trap.attempts, []);
});

Deno.test("gemini: the env of `pml init --client gemini` passes the BYOK variables .pml.json names, which Gemini hides otherwise", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem"] },
    env: ["TAVILY_API_KEY", "EXA_API_KEY"],
  });
  const init = await run(PML_BIN, ["init", "--yes", "--client", "gemini"], ws.dir, {
    HOME: ws.home,
  });
  assertEquals(init.code, 0, init.out);
  const settingsPath = join(ws.dir, ".gemini", "settings.json");
  const settings = JSON.parse(Deno.readTextFileSync(settingsPath));
  const entry = settings.mcpServers.pml;
  assertEquals(entry.env, { TAVILY_API_KEY: "${TAVILY_API_KEY}", EXA_API_KEY: "${EXA_API_KEY}" });

  // The same entry with a command that records the environment Gemini starts it with.
  const dump = join(ws.root, "env.txt");
  const recorder = join(ws.root, "record-env");
  Deno.writeTextFileSync(recorder, `#!/bin/sh\nenv > '${dump}'\nexit 1\n`);
  Deno.chmodSync(recorder, 0o755);
  const startedWith = async (pml: Record<string, unknown>) => {
    Deno.writeTextFileSync(
      settingsPath,
      JSON.stringify({ ...settings, mcpServers: { pml: { ...pml, command: recorder } } }),
    );
    if (existsSync(dump)) Deno.removeSync(dump);
    const list = await run(join(BIN, "gemini"), ["mcp", "list"], ws.dir, {
      HOME: ws.home,
      GEMINI_API_KEY: "scripted",
      GEMINI_CLI_TRUST_WORKSPACE: "true",
      TAVILY_API_KEY: "tvly-test",
      GITHUB_TOKEN: "gh-test",
      ...trap.env,
    });
    assertStringIncludes(list.out, "pml:", list.out);
    return Object.fromEntries(
      Deno.readTextFileSync(dump).split("\n").filter(Boolean).map((l) => {
        const eq = l.indexOf("=");
        return [l.slice(0, eq), l.slice(eq + 1)];
      }),
    );
  };
  const env = await startedWith(entry);
  assertEquals(env.TAVILY_API_KEY, "tvly-test");
  assertEquals(
    env.EXA_API_KEY ?? "",
    "",
    "an unset variable arrives empty (PML treats it as unset)",
  );
  assert(!("GITHUB_TOKEN" in env), "a variable .pml.json does not name stays hidden");
  // Without the entry's env, Gemini keeps the key from pml: the pass-through is needed.
  const { env: _, ...bare } = entry;
  assert(!("TAVILY_API_KEY" in await startedWith(bare)));
  assertEquals(trap.attempts, []);
});
