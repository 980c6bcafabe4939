/**
 * What PML costs an agent in tokens, counted with `gpt-tokenizer` (pinned devDependency) and its
 * `o200k_base` encoding (GPT-4o's; other models' tokenizers differ by some percent, the ratios
 * less). Reported, not asserted:
 *
 * 1. `tools/list`: the tool definitions an agent is given (the JSON of the `tools` array), from
 *    `pml stdio` local-only, from `pml stdio` with a cloud (pml-server's tools added), and from
 *    `@modelcontextprotocol/server-filesystem`'s own list.
 * 2. A task: count the lines with "ERROR" in each of 20 log files (2 KiB each). As separate
 *    `filesystem:read_file` calls the agent receives every file; as one `pml:execute` it receives
 *    the counts. Both through the same `pml stdio`; the tokens the agent writes (the calls'
 *    arguments, the code) are printed beside them.
 *
 *   deno run -A bench/tokens_bench.ts
 */
import { join } from "node:path";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import type { Client } from "../packages/pml/src/sdk/client.ts";
import { tempWorkspace, textOf } from "../packages/pml/src/testing/workspace.ts";
import { startCloud, startUpstream } from "../tests/e2e/_cloud.ts";
import { connectStdio } from "../tests/e2e/_spawn.ts";
import { nodePath, overStdio, ROOT } from "./_peers.ts";
import { figure } from "./_stats.ts";

const FILES = 20;
const ENCODING = "o200k_base (gpt-tokenizer 4.0.0)";

await using ws = tempWorkspace({
  permissions: { allow: ["filesystem", "json", "math", "text"], ask: [], deny: [] },
});
const names = Array.from({ length: FILES }, (_, i) => `logs/app-${i + 1}.log`);
names.forEach((name, i) => {
  const lines = Array.from({ length: 28 }, (_, n) => {
    const level = (n * 7 + i) % 9 === 0 ? "ERROR" : n % 3 ? "INFO" : "DEBUG";
    return `2026-11-25T10:${String(n).padStart(2, "0")}:00Z ${level} worker-${i} request ${
      1000 + n
    } handled in ${(n * 13) % 97} ms`;
  });
  ws.write(name, lines.join("\n") + "\n");
});

const listTokens = async (client: Client) =>
  countTokens(JSON.stringify((await client.listTools()).tools));

// 1. tools/list
const local = await connectStdio(ws);
const localTools = (await local.listTools()).tools.length;
const localTokens = await listTokens(local);

await using upstream = await startUpstream();
await using cloud = await startCloud(upstream.url);
const withCloud = await connectStdio(ws, {
  env: { PML_CLOUD_URL: cloud.url, PML_API_KEY: cloud.key },
});
const cloudTools = (await withCloud.listTools()).tools.length;
const cloudTokens = await listTokens(withCloud);
await withCloud.close();

const fsServer = await overStdio({
  command: nodePath(),
  args: [join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), ws.dir],
  env: { PATH: Deno.env.get("PATH") ?? "" },
});
const fsTools = (await fsServer.client.listTools()).tools.length;
const fsTokens = await listTokens(fsServer.client);
await fsServer.close();

console.log(`tools/list, tokens of the tools array as JSON (${ENCODING})`);
console.log(`  pml stdio, local only            ${localTools} tools  ${localTokens} tokens`);
console.log(`  pml stdio, with a cloud          ${cloudTools} tools  ${cloudTokens} tokens`);
console.log(`  server-filesystem's own list     ${fsTools} tools  ${fsTokens} tokens`);
figure({
  id: "11-tokens-list",
  what: `tokens of \`tools/list\` (${ENCODING}): \`pml stdio\` local only, with a cloud`,
  now: `${localTokens} (${localTools} tools); with a cloud ${cloudTokens} (${cloudTools} tools); ` +
    `server-filesystem's own ${fsTokens} (${fsTools} tools)`,
  target: "reported",
  bench: "tokens",
});

// 2. the 20-file task
let receivedCalls = 0;
let sentCalls = 0;
const counts: Record<string, number> = {};
for (const path of names) {
  const args = { path };
  sentCalls += countTokens(JSON.stringify({ name: "filesystem__read_file", arguments: args }));
  const result = await local.callTool({ name: "filesystem__read_file", arguments: args });
  if (result.isError) throw new Error(textOf(result));
  const text = textOf(result);
  receivedCalls += countTokens(text);
  counts[path] = text.split("\n").filter((line) => line.includes(" ERROR ")).length;
}
const code = `const files = ${JSON.stringify(names)};
const texts = await Promise.all(files.map((path) => mcp.filesystem.read_file({ path })));
return Object.fromEntries(files.map((f, i) => [f, texts[i].split("\\n").filter((l) => l.includes(" ERROR ")).length]));`;
const executed = await local.callTool({ name: "pml__execute", arguments: { code } });
const executeText = textOf(executed);
if (executed.isError || !executeText.includes('"success"')) throw new Error(executeText);
const result = JSON.parse(executeText).result;
if (JSON.stringify(result) !== JSON.stringify(counts)) {
  throw new Error(
    `pml:execute counted ${JSON.stringify(result)}, the calls ${JSON.stringify(counts)}`,
  );
}
const receivedExecute = countTokens(executeText);
const sentExecute = countTokens(JSON.stringify({ name: "pml__execute", arguments: { code } }));
await local.close();

console.log(`\nthe same job: lines with ERROR in each of ${FILES} log files (~2 KiB each)`);
console.log(
  `  ${FILES} separate read_file calls   received ${receivedCalls} tokens, sent ${sentCalls}`,
);
console.log(
  `  one pml:execute                 received ${receivedExecute} tokens, sent ${sentExecute}`,
);
figure({
  id: "11b-tokens-task",
  what: `tokens an agent receives for one ${FILES}-file job: separate calls vs one \`pml:execute\``,
  now: `${receivedCalls} vs ${receivedExecute} (${
    (receivedCalls / receivedExecute).toFixed(1)
  }× fewer; sent ${sentCalls} vs ${sentExecute})`,
  target: "reported",
  bench: "tokens",
});
