import type { MetaTool } from "../../gateway/gateway.ts";
import type { CloudTarget } from "./cloud_target.ts";

const DEFAULT_SCHEMA: Record<string, unknown> = {
  type: "object",
  properties: {
    query: { type: "string", description: "What you are looking for, in words" },
    limit: { type: "number", description: "Largest number of results" },
  },
  required: ["query"],
};

/**
 * `pml:search` (cloud mode): forwards the query to the cloud's `pml:search`, which searches the
 * registry and the tools the platform serves. Its description and input schema are the cloud's
 * when known.
 */
export function cloudSearchTool(cloud: CloudTarget): MetaTool {
  return {
    id: "pml:search",
    get description() {
      return cloud.descriptionOf("pml:search") ??
        "Search the PML registry for tools and capabilities that match a need";
    },
    get inputSchema() {
      return cloud.schemaOf("pml:search") ?? DEFAULT_SCHEMA;
    },
    // A search changes nothing: clients may run it side by side and without their own approval.
    annotations: { readOnlyHint: true },
    run: (args, channel) =>
      cloud.callCloud("pml:search", args, { signal: channel.signal, progress: channel.progress }),
  };
}
