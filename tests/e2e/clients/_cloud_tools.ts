/** What `pml-server` itself lists, asked directly with the SDK client: the reference for schemas. */
import { Client } from "../../../packages/pml/src/sdk/client.ts";
import { StreamableHTTPClientTransport } from "../../../packages/pml/src/sdk/http_client.ts";

/** The cloud's tools by exposed name (`json__parse`), from its own `tools/list`. */
export async function cloudTools(cloud: { url: string; key: string }) {
  const client = new Client({ name: "e2e-check", version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${cloud.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${cloud.key}` } },
    }),
  );
  try {
    return new Map((await client.listTools()).tools.map((t) => [t.name, t]));
  } finally {
    await client.close();
  }
}
