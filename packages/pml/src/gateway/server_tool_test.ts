/**
 * Who answers the question about an MCP server's tool (docs/approvals.md "Who decides"): the
 * server a tool belongs to, by the target that runs it and, for the cloud, by an http pin; whether
 * its pinned definition only reads; and the column `approvalMode` puts it in.
 */
import { join } from "node:path";
import { createAuditLog } from "../audit/audit.ts";
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { Lockfile } from "../registry/lockfile.ts";
import { McpPins, type ToolDefinition } from "../registry/mcp_pins.ts";
import { ModuleCache } from "../registry/module_cache.ts";
import { RegistryClient } from "../registry/registry_client.ts";
import { HttpPins } from "../targets/cloud/http_pins.ts";
import type { Target } from "../targets/target.ts";
import type { ApprovalRequest } from "../permission/approvals.ts";
import { approvalMode } from "./create_gateway.ts";
import { serverToolOf } from "./server_tool.ts";
import { approvalWhy } from "./approval_card.ts";
import type { StoredApproval } from "../permission/approval_store.ts";

const target = (name: string) => ({ name }) as Target;
const def = (name: string, annotations?: Record<string, unknown>): ToolDefinition => ({
  name,
  description: name,
  inputSchema: { type: "object" },
  ...(annotations ? { annotations } : {}),
});

async function pinned(pins: McpPins, ns: string, type: "stdio" | "http", defs: ToolDefinition[]) {
  const name = `pml.mcp.${ns}.server`;
  await pins.checkMetadata(name, { fqdn: name, type, routing: "client", document: { ns } });
  await pins.checkTools(name, defs);
}

Deno.test("serverToolOf: a server's tool, read-only only as pinned; PML's own and platform tools are none", async () => {
  const ws = await Deno.makeTempDir({ prefix: "pml-server-tool-" });
  try {
    const lock = await Lockfile.open(ws);
    const pins = new McpPins({
      lockfile: () => Promise.resolve(lock),
      cache: new ModuleCache(join(ws, "home")),
      audit: createAuditLog(ws),
    });
    const http = new HttpPins({ client: new RegistryClient({ registries: [] }), pins });
    const of = serverToolOf({ pins, http });
    await pinned(pins, "fs", "stdio", [
      def("read", { readOnlyHint: true }),
      def("write", { readOnlyHint: false, destructiveHint: true }),
      def("both", { readOnlyHint: true, destructiveHint: true }),
      def("bare"),
    ]);
    await pinned(pins, "weather", "http", [def("forecast", { readOnlyHint: true }), def("post")]);

    assertEquals(await of("fs:read", target("stdio")), { name: "fs", read_only: true });
    for (const tool of ["write", "both", "bare", "later"]) {
      assertEquals(await of(`fs:${tool}`, target("stdio")), { name: "fs", read_only: false }, tool);
    }
    assertEquals(await of("mine:x", target("remote")), { name: "mine", read_only: false });
    assertEquals(await of("weather:forecast", target("cloud")), {
      name: "weather",
      read_only: true,
    });
    assertEquals(await of("weather:post", target("cloud")), { name: "weather", read_only: false });
    assertEquals(await of("json:parse", target("cloud")), undefined, "a platform tool");
    assertEquals(await of("filesystem:write_file", target("std")), undefined);
    assertEquals(await of("greet:hello", target("deno")), undefined);
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
});

Deno.test("approvalMode: a server's tool is the human's unless pinned read-only; an explicit setting decides", () => {
  const ask = (context: Record<string, unknown>): ApprovalRequest => ({
    type: "tool_permission",
    description: "Allow?",
    context: { tool: "fs:x", ...context },
  });
  const writes = ask({ mcp_server: { name: "fs", read_only: false } });
  const reads = ask({ mcp_server: { name: "fs", read_only: true } });
  assertEquals(approvalMode(undefined, writes), "human");
  assertEquals(approvalMode(undefined, reads), "agent");
  assertEquals(approvalMode(undefined, ask({})), "agent", "no server: the other column");
  assertEquals(approvalMode("agent", writes), "agent");
  assertEquals(approvalMode("human", reads), "human");
  // A malformed context is no read-only claim.
  assertEquals(
    approvalMode(undefined, ask({ mcp_server: { name: "fs", read_only: "yes" } })),
    "human",
  );
});

Deno.test("approval page: a server's tool says whose it is and why the human decides", () => {
  const why = approvalWhy(() => ({ allow: [], ask: [], deny: [] }), () => true);
  const stored = (read_only: boolean) =>
    ({
      id: "a",
      type: "tool_permission",
      description: "Allow?",
      context: { tool: "fs:write", mcp_server: { name: "fs", read_only } },
      mode: read_only ? "agent" : "human",
      createdAt: 0,
      expiresAt: 1,
    }) as StoredApproval;
  assertStringIncludes(
    why(stored(false)),
    'a tool of the MCP server "fs", whose pinned definition',
  );
  assert(!why(stored(true)).includes("MCP server"));
});
