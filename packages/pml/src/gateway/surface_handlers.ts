/**
 * The MCP face of {@link Surface}: the handlers of resources, prompts, completions and the log
 * level on the gateway's SDK `Server`, and the capabilities they add to `initialize`
 * (docs/surface.md). Errors become JSON-RPC errors here, as `tools/call`'s do in `mcp_server.ts`.
 *
 * @module
 */
import type { Server } from "../sdk/server.ts";
import type { Extra } from "../sdk/incoming.ts";
import {
  CompleteRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type ServerCapabilities,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "../sdk/types.ts";
import { isPmlError } from "../errors.ts";
import { passedOn } from "../targets/call_errors.ts";
import type { CallChannel } from "./gateway.ts";
import type { Surface } from "./surface.ts";

/** What `initialize` says PML offers besides tools. */
export const SURFACE_CAPABILITIES: ServerCapabilities = {
  resources: { subscribe: true, listChanged: true },
  prompts: { listChanged: true },
  completions: {},
  logging: {},
};

/** The JSON-RPC code of a refusal or an unknown name (the MCP spec's -32002: resource not found). */
const CODES: Record<string, number> = {
  UNKNOWN_RESOURCE: -32002,
  UNKNOWN_PROMPT: ErrorCode.InvalidParams,
  PERMISSION_DENIED: ErrorCode.InvalidRequest,
  APPROVAL_REQUIRED: ErrorCode.InvalidRequest,
};

/** Runs `work`; a PML refusal or a server's error goes to the client as a JSON-RPC error. */
async function answered<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (isPmlError(err) && CODES[err.code] !== undefined) {
      // Not an McpError: its constructor prefixes "MCP error N: ", which the client adds again.
      throw Object.assign(new Error(err.message), { code: CODES[err.code] });
    }
    if (err instanceof McpError) throw passedOn(err);
    throw err;
  }
}

/** Puts the surface's handlers on `server`; `channelOf` gives a request's way to the human. */
export function serveSurface(
  server: Server,
  surface: Surface,
  channelOf: (extra: Extra) => CallChannel,
): void {
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: await surface.listResources(),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: await surface.listResourceTemplates(),
  }));
  server.setRequestHandler(
    ReadResourceRequestSchema,
    (request, extra) => answered(() => surface.readResource(request.params.uri, channelOf(extra))),
  );
  server.setRequestHandler(SubscribeRequestSchema, (request, extra) =>
    answered(async () => {
      await surface.subscribe(request.params.uri, channelOf(extra));
      return {};
    }));
  server.setRequestHandler(UnsubscribeRequestSchema, (request, extra) =>
    answered(async () => {
      await surface.unsubscribe(request.params.uri, channelOf(extra));
      return {};
    }));
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({
    prompts: await surface.listPrompts(),
  }));
  server.setRequestHandler(
    GetPromptRequestSchema,
    (request, extra) =>
      answered(() =>
        surface.getPrompt(request.params.name, request.params.arguments, channelOf(extra))
      ),
  );
  server.setRequestHandler(
    CompleteRequestSchema,
    (request, extra) => answered(() => surface.complete(request.params, channelOf(extra))),
  );
  server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    await surface.setLoggingLevel(request.params.level);
    return {};
  });
}
