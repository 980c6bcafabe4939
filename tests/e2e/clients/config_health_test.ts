/**
 * Real clients read what `pml init --client` writes: Gemini CLI connects to pml through
 * `.gemini/settings.json` (`gemini mcp list`) and passes it the BYOK variables the entry names,
 * Claude Code starts the `.mcp.json` entry with its whole environment (no env block needed), and
 * Codex parses the `[mcp_servers.pml]` table (`codex mcp get pml`). Private HOME, proxies on the
 * egress trap.
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
import { startAnthropicApi } from "./_anthropic_api.ts";
import { approveProject, CLAUDE_BIN, claudeEnv } from "./_claude.ts";
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

/**
 * A command that records the environment it was started with, then fails: a client's MCP entry
 * with this command shows what the client passes to the server it starts.
 */
function envRecorder(root: string) {
  const dump = join(root, "env.txt");
  const command = join(root, "record-env");
  Deno.writeTextFileSync(command, `#!/bin/sh\nenv > '${dump}'\nexit 1\n`);
  Deno.chmodSync(command, 0o755);
  return {
    command,
    reset: () => existsSync(dump) && Deno.removeSync(dump),
    env: (): Record<string, string> =>
      Object.fromEntries(
        Deno.readTextFileSync(dump).split("\n").filter(Boolean).map((l) => {
          const eq = l.indexOf("=");
          return [l.slice(0, eq), l.slice(eq + 1)];
        }),
      ),
  };
}

/** The variables a BYOK check looks for, as set in the client's environment. */
const KEYS = { TAVILY_API_KEY: "tvly-test", GITHUB_TOKEN: "gh-test" };

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
  const recorder = envRecorder(ws.root);
  const startedWith = async (pml: Record<string, unknown>) => {
    Deno.writeTextFileSync(
      settingsPath,
      JSON.stringify({ ...settings, mcpServers: { pml: { ...pml, command: recorder.command } } }),
    );
    recorder.reset();
    const list = await run(join(BIN, "gemini"), ["mcp", "list"], ws.dir, {
      HOME: ws.home,
      GEMINI_API_KEY: "scripted",
      GEMINI_CLI_TRUST_WORKSPACE: "true",
      ...KEYS,
      ...trap.env,
    });
    assertStringIncludes(list.out, "pml:", list.out);
    return recorder.env();
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

Deno.test("claude: Claude Code starts the .mcp.json entry with its whole environment, so it needs no env block", async () => {
  await using trap = startEgressTrap();
  await using api = startAnthropicApi([]);
  await using ws = tempWorkspace();
  const init = await run(PML_BIN, ["init", "--yes", "--client", "claude"], ws.dir, {
    HOME: ws.home,
  });
  assertEquals(init.code, 0, init.out);
  const entry = JSON.parse(ws.read(".mcp.json")).mcpServers.pml;
  assertEquals(Object.keys(entry).sort(), ["args", "command", "type"]);
  const recorder = envRecorder(ws.root);
  ws.write(
    ".mcp.json",
    JSON.stringify({ mcpServers: { pml: { ...entry, command: recorder.command } } }),
  );
  await approveProject(ws.home, ws.dir);
  const list = await new Deno.Command(CLAUDE_BIN, {
    args: ["mcp", "list"],
    cwd: ws.dir,
    env: claudeEnv(ws.home, api, trap, KEYS),
    clearEnv: true,
    stdin: "null",
  }).output();
  const out = new TextDecoder().decode(list.stdout);
  assertStringIncludes(out, "pml:", out);
  const env = recorder.env();
  assertEquals([env.TAVILY_API_KEY, env.GITHUB_TOKEN], ["tvly-test", "gh-test"]);
  assert(!Object.values(env).some((v) => v.includes("workspaceFolder")));
  assertEquals(trap.attempts, []);
});
