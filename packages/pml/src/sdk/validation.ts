// The SDK's "./*" export maps types to "*.js.d.ts", which Deno cannot resolve; name the real file.
// @ts-types="../../../../node_modules/@modelcontextprotocol/sdk/dist/esm/validation/ajv-provider.d.ts"
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv-provider.js";
// @ts-types="../../../../node_modules/@modelcontextprotocol/sdk/dist/esm/validation/types.d.ts"
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";

/**
 * The SDK's own JSON Schema validator (Ajv), built when it first checks a schema. A `Server` or
 * `Client` builds one as it is constructed by default (~4 ms on the gateway's start, for each stdio
 * dependency's client, and its compiled meta-schemas stay in memory), though most never use it:
 * a client checks a tool's `outputSchema`, a server an elicitation's `requestedSchema`. One per
 * `Server` or `Client`, as the SDK has it (Ajv caches schemas by `$id`, per instance).
 */
export function lazySchemaValidator(): jsonSchemaValidator {
  let ajv: AjvJsonSchemaValidator | undefined;
  return { getValidator: (schema) => (ajv ??= new AjvJsonSchemaValidator()).getValidator(schema) };
}
