// The SDK's "./*" export maps types to "*.js.d.ts", which Deno cannot resolve; name the real file.
// @ts-types="../../../../node_modules/@modelcontextprotocol/sdk/dist/esm/shared/auth.d.ts"
export * from "@modelcontextprotocol/sdk/shared/auth.js";
