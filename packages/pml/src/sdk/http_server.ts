// The SDK's "./*" export maps types to "*.js.d.ts", which Deno cannot resolve; name the real file.
// @ts-types="../../../../node_modules/@modelcontextprotocol/sdk/dist/esm/server/webStandardStreamableHttp.d.ts"
export * from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
// @ts-types="../../../../node_modules/@modelcontextprotocol/sdk/dist/esm/server/requestBody.d.ts"
export {
  DEFAULT_MAX_REQUEST_BODY_SIZE,
  readRequestBody,
  requestBodyTooLargeMessage,
} from "@modelcontextprotocol/sdk/server/requestBody.js";
