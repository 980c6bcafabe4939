/**
 * An SDK client in its own process calling `json__parse` on a pml-server: the anchor of the cloud
 * bench as a real client sees the server (across a process boundary). Prints the samples (ms) as
 * JSON on stdout.
 *
 *   deno run -A bench/_direct_client.ts <server url> <api key> <rounds>
 */
import { Client } from "../packages/pml/src/sdk/client.ts";
import { StreamableHTTPClientTransport } from "../packages/pml/src/sdk/http_client.ts";

const [url, key, rounds] = Deno.args;
const client = new Client({ name: "bench-direct", version: "1" }, { capabilities: {} });
await client.connect(
  new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  }),
);
const ARGS = { text: '{"a":[1,2,3],"b":{"c":"d"}}' };
const call = async () => {
  const r = await client.callTool({ name: "json__parse", arguments: ARGS });
  if (r.isError) throw new Error(JSON.stringify(r));
};
for (let i = 0; i < 20; i++) await call();
const samples: number[] = [];
for (let i = 0; i < Number(rounds); i++) {
  const t = performance.now();
  await call();
  samples.push(performance.now() - t);
}
await client.close();
console.log(JSON.stringify(samples));
