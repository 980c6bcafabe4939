/**
 * The SDK's Streamable HTTP and SSE client transports (`./http_client.ts`, `./sse_client.ts`),
 * imported on the first connection that needs them rather than with the module graph: loading them
 * (with the OAuth schemas they build) took ~8 ms of every `pml stdio` start (docs/speed.md). The
 * specifiers are bare, as in `./load_http_server.ts`: `deno bundle` inlines every local module of
 * the npm package's `pml.js` eagerly, so a local module importing them would load them at start.
 *
 * A bare dynamic import is typed by the SDK's JavaScript file (its export map names types
 * `*.js.d.ts`, which do not exist; `@ts-types` does not apply to `import()`), whose classes are
 * not the declared ones (private fields, `any` parameters). The modules are those that
 * `./http_client.ts` and `./sse_client.ts` type with the real declarations: named here, once.
 */
export type HttpClientSdk = typeof import("./http_client.ts");
export type SseClientSdk = typeof import("./sse_client.ts");

let http: Promise<HttpClientSdk> | undefined;
let sse: Promise<SseClientSdk> | undefined;

/** Imports the SDK's Streamable HTTP client transport, once. */
export function loadHttpClient(): Promise<HttpClientSdk> {
  return http ??= import("@modelcontextprotocol/sdk/client/streamableHttp.js")
    .then((module) => module as unknown as HttpClientSdk);
}

/** Imports the SDK's SSE client transport, once. */
export function loadSseClient(): Promise<SseClientSdk> {
  return sse ??= import("@modelcontextprotocol/sdk/client/sse.js")
    .then((module) => module as unknown as SseClientSdk);
}

export type ClientAuthSdk = typeof import("./client_auth.ts");
let clientAuth: Promise<ClientAuthSdk> | undefined;

/** Imports the SDK's client OAuth (`client/auth.js`), once: only a sign-in or a logout needs it. */
export function loadClientAuth(): Promise<ClientAuthSdk> {
  return clientAuth ??= import("@modelcontextprotocol/sdk/client/auth.js")
    .then((module) => module as unknown as ClientAuthSdk);
}
