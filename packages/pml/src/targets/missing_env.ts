import { missingEnvMessage } from "../deps/launch.ts";
import type { CallToolResult } from "../sdk/types.ts";
import { errorResult } from "./target.ts";

/**
 * The result of a call to a server whose required variables are not set (`api_key_required`):
 * said before anything is asked or started, the same for stdio and remote servers.
 */
export function missingEnvResult(server: string, missing: readonly string[]): CallToolResult {
  return errorResult(missingEnvMessage(server, missing), {
    status: "error",
    code: "api_key_required",
    server,
    missing,
  });
}
