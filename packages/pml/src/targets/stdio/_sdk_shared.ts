// Same workaround as src/sdk/ (see its README): the SDK's "./*" export maps types to "*.js.d.ts",
// which Deno cannot resolve, so the real declaration files are named with @ts-types.
// @ts-types="../../../../../node_modules/@modelcontextprotocol/sdk/dist/esm/shared/stdio.d.ts"
export { serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
// @ts-types="../../../../../node_modules/@modelcontextprotocol/sdk/dist/esm/shared/transport.d.ts"
export type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
