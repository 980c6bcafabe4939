/**
 * The memory floor of PML's gateway process: the SDK's `Server` on PML's own stdio transport,
 * listing one tool, and nothing else (no gateway, targets or config). `bench/stdio_bench.ts` runs it
 * with the launcher's V8 flags next to `pml stdio` (docs/speed.md, "Floors").
 *
 *   deno run -A --v8-flags=… bench/_sdk_server.ts
 */
import { LineStdioTransport } from "../packages/pml/src/ingress/stdio_transport.ts";
import { Server } from "../packages/pml/src/sdk/server.ts";
import { lazySchemaValidator } from "../packages/pml/src/sdk/validation.ts";
import { ListToolsRequestSchema } from "../packages/pml/src/sdk/types.ts";

// As the gateway builds its own: Ajv only on a first schema check.
const server = new Server({ name: "floor", version: "1" }, {
  capabilities: { tools: {} },
  jsonSchemaValidator: lazySchemaValidator(),
});
server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [{ name: "noop", description: "does nothing", inputSchema: { type: "object" } }],
}));
await server.connect(new LineStdioTransport());
