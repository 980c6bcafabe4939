/**
 * `@casys/pml`: the PML gateway as a library. Named re-exports only.
 * @module
 */
export { type Config, loadConfig } from "./src/config/config.ts";
export { resolveWorkspace } from "./src/config/workspace.ts";
export { PmlError } from "./src/errors.ts";
export { createGateway } from "./src/gateway/create_gateway.ts";
export { Gateway } from "./src/gateway/gateway.ts";
export { createMcpServer } from "./src/gateway/mcp_server.ts";
export { exposedName } from "./src/gateway/names.ts";
export { serveStdio } from "./src/ingress/stdio.ts";
export {
  checkPermission,
  inferCapabilityApprovalMode,
  matchesPattern,
} from "./src/permission/patterns.ts";
export { createRoutingResolver, resolveRouting } from "./src/routing/routing.ts";
