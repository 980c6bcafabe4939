import { Buffer } from "node:buffer";
import { PmlError } from "../../errors.ts";

/**
 * The `X-PML-BYOK` value for one call (DESIGN §8): base64 of the JSON object of exactly the
 * variables the tool declares, taken from the environment. A declared variable that `.pml.json`
 * `env` does not list, or that is not set, is an error naming it and saying how to provide it.
 * Returns `undefined` when the tool declares nothing.
 *
 * @example
 * ```ts
 * byokHeader("tavily:search", ["TAVILY_API_KEY"], ["TAVILY_API_KEY"], { TAVILY_API_KEY: "tvly-1" });
 * // "eyJUQVZJTFlfQVBJX0tFWSI6InR2bHktMSJ9"
 * ```
 */
export function byokHeader(
  toolId: string,
  declared: readonly string[],
  allowed: readonly string[],
  env: Readonly<Record<string, string>>,
): string | undefined {
  if (declared.length === 0) return undefined;
  const notListed = declared.filter((v) => !allowed.includes(v));
  const unset = declared.filter((v) => allowed.includes(v) && !env[v]);
  const missing = [...notListed, ...unset];
  if (missing.length > 0) {
    const names = missing.map((v) => `"${v}"`).join(", ");
    const how = [
      notListed.length
        ? `add ${notListed.map((v) => `"${v}"`).join(", ")} to "env" in .pml.json`
        : undefined,
      `set ${names} in the workspace's .env file or in the environment pml runs in (for example ` +
      `the "env" of the pml entry in .mcp.json)`,
    ].filter(Boolean).join(" and ");
    throw new PmlError(
      "BYOK_MISSING",
      `"${toolId}" needs your API key ${names} (bring your own key): ${how}`,
      { details: { variables: missing } },
    );
  }
  const values = Object.fromEntries(declared.map((v) => [v, env[v]]));
  return Buffer.from(JSON.stringify(values), "utf8").toString("base64");
}

/** Reads a list of variable names from tool metadata, if it declares one. */
export function declaredVariables(meta: unknown): string[] | undefined {
  if (!meta || typeof meta !== "object") return undefined;
  const m = meta as Record<string, unknown>;
  for (const key of ["envRequired", "pml/envRequired", "byok"]) {
    const v = m[key];
    if (Array.isArray(v) && v.every((s) => typeof s === "string")) return v as string[];
  }
  return undefined;
}
