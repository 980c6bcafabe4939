/**
 * The SDK's Streamable HTTP server transport and its request body reader (`./http_server.ts`),
 * imported when `pml serve` starts rather than with the module graph. The specifiers are bare:
 * `deno bundle` inlines every local module of the npm package's `pml.js` eagerly (a local dynamic
 * import included), so the SDK modules a local module imports statically become static imports of
 * the bundle and loaded at every `pml stdio` start (~5 ms); a bare dynamic import stays dynamic.
 */
export type HttpServerSdk = typeof import("./http_server.ts");

let loading: Promise<HttpServerSdk> | undefined;

/** Imports the SDK's HTTP server modules, once. */
export function loadHttpServer(): Promise<HttpServerSdk> {
  return loading ??= Promise.all([
    import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"),
    import("@modelcontextprotocol/sdk/server/requestBody.js"),
  ]).then(([transport, body]) => ({ ...transport, ...body }) as unknown as HttpServerSdk);
}
