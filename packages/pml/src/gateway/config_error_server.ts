import { Server } from "../sdk/server.ts";
import { lazySchemaValidator } from "../sdk/validation.ts";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
} from "../sdk/types.ts";
import { PML_VERSION } from "./mcp_server.ts";

/** The one tool the stand-in lists, so that an agent can see and report the problem. */
export const CONFIG_ERROR_TOOL = "pml__config_error";

/**
 * The MCP server `pml stdio` runs when `.pml.json` is invalid: it answers `initialize` (with the
 * error in its instructions), lists one tool that explains it, and answers every call with the
 * error as an `isError` result, naming the file, the field and what was expected. The client shows
 * the user why PML has no tools instead of "failed to connect"; nothing else runs.
 */
export function createConfigErrorServer(message: string): Server {
  const text =
    `PML is not running: ${message}. Fix the file (or run \`pml init\`) and restart the MCP server.`;
  const server = new Server(
    { name: "pml", version: PML_VERSION },
    { capabilities: { tools: {} }, instructions: text, jsonSchemaValidator: lazySchemaValidator() },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [{
      name: CONFIG_ERROR_TOOL,
      description: text,
      inputSchema: { type: "object", properties: {} },
    }],
  }));
  server.setRequestHandler(CallToolRequestSchema, (): CallToolResult => ({
    content: [{ type: "text", text }],
    isError: true,
  }));
  return server;
}
