import { Server } from "../sdk/server.ts";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ElicitResultSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "../sdk/types.ts";
import { isPmlError } from "../errors.ts";
import { type ApprovalDecision, DECISION_SCHEMA, type Elicit } from "../permission/approvals.ts";
import type { CallChannel, Gateway } from "./gateway.ts";

/** Package version, reported in `initialize`. */
export const PML_VERSION = "0.1.0";

const INSTRUCTIONS = "PML routes each tool call to local execution (your files, sandboxed to the " +
  "workspace) or to the PML server. Some calls need approval: when a result has " +
  '"status":"approval_required", ask the user and answer with pml__continue.';

/**
 * The MCP face of a {@link Gateway}: an SDK `Server` with `tools/list` and `tools/call`. One per
 * connection (stdio has one; `pml serve` makes one per session over the same gateway).
 */
export function createMcpServer(gateway: Gateway): Server {
  const server = new Server(
    { name: "pml", version: PML_VERSION },
    { capabilities: { tools: { listChanged: true } }, instructions: INSTRUCTIONS },
  );

  server.setRequestHandler(
    ListToolsRequestSchema,
    async () => ({ tools: await gateway.listTools() }),
  );

  server.setRequestHandler(
    CallToolRequestSchema,
    async (request, extra): Promise<CallToolResult> => {
      const elicit: Elicit | undefined = server.getClientCapabilities()?.elicitation
        ? async (req) => {
          const answer = await extra.sendRequest(
            {
              method: "elicitation/create",
              params: { message: req.description, requestedSchema: DECISION_SCHEMA },
            },
            ElicitResultSchema,
            { timeout: 10 * 60 * 1000 },
          );
          const decision = answer.action === "accept" ? answer.content?.decision : "no";
          return (["yes", "always", "no"].includes(decision as string)
            ? decision
            : "no") as ApprovalDecision;
        }
        : undefined;
      const token = request.params._meta?.progressToken;
      const channel: CallChannel = {
        elicit,
        signal: extra.signal,
        progress: token === undefined
          ? undefined
          : (progress, total, message) =>
            extra.sendNotification({
              method: "notifications/progress",
              params: { progressToken: token, progress, total, message },
            }),
      };
      try {
        return await gateway.callTool(request.params.name, request.params.arguments, channel);
      } catch (err) {
        if (isPmlError(err, "UNKNOWN_TOOL")) {
          throw new McpError(
            ErrorCode.InvalidParams,
            err.message,
          );
        }
        throw err;
      }
    },
  );
  return server;
}
