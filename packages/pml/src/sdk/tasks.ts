// MCP tasks (SEP-1686): the SDK's task interfaces and its in-memory store and message queue, from
// their own files (the package's `experimental/tasks` index also loads its McpServer).
// The SDK's "./*" export maps types to "*.js.d.ts", which Deno cannot resolve; name the real file.
// @ts-types="../../../../node_modules/@modelcontextprotocol/sdk/dist/esm/experimental/tasks/interfaces.d.ts"
export * from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
// @ts-types="../../../../node_modules/@modelcontextprotocol/sdk/dist/esm/experimental/tasks/stores/in-memory.d.ts"
export * from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js";
// @ts-types="../../../../node_modules/@modelcontextprotocol/sdk/dist/esm/shared/protocol.d.ts"
export type { RequestTaskStore } from "@modelcontextprotocol/sdk/shared/protocol.js";
