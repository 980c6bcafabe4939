/**
 * HTTP plumbing shared by the routes: JSON responses, the `HttpError` that routes throw for
 * client errors, bounded body reading, JSON bodies and `If-None-Match` matching.
 *
 * @module
 */

/** A client error with its status, a stable `error` code and a message for humans. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
    /** The whole response body, when the protocol fixes its form (a JSON-RPC error). */
    readonly body?: unknown,
  ) {
    super(message);
    this.name = "HttpError";
  }
}

/** A JSON response (`Content-Type: application/json`). */
export function jsonResponse(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** The `{"error","message",…}` body of an {@link HttpError}. */
export function errorResponse(error: HttpError): Response {
  return jsonResponse(
    error.status,
    error.body ?? { error: error.code, message: error.message, ...error.extra },
    error.headers,
  );
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** A body parsed as JSON, or why it is not JSON. */
export type ParsedBody = { readonly ok: true; readonly value: unknown } | {
  readonly ok: false;
  readonly error: Error;
};

/**
 * A request body's bytes as JSON: UTF-8, strictly (a byte that is no UTF-8 is an error, not a
 * U+FFFD), then `JSON.parse`. Each caller answers the error its own way (the MCP endpoint a
 * JSON-RPC `-32700`, the publication an HTTP 400 `invalid_json`).
 */
export function parseJsonBody(bytes: Uint8Array): ParsedBody {
  try {
    return { ok: true, value: JSON.parse(UTF8.decode(bytes)) };
  } catch (error) {
    return { ok: false, error: error as Error };
  }
}

/** Default time a request body may take to arrive, whole (ms). */
export const BODY_TIMEOUT_MS = 30_000;

/**
 * Reads the whole request body, refusing more than `maxBytes` (by `Content-Length` first, then
 * while streaming, so a lying or absent header does not help) and waiting at most `timeoutMs` for
 * all of it (a client that sends part of a body and then nothing, or trickles it, holds no
 * connection beyond that).
 *
 * @throws {HttpError} 413 `payload_too_large`; 408 `request_timeout` (with `Connection: close`)
 * when the body did not arrive in time; 400 `incomplete_body` when the client cut it off. Both
 * are the client's failures: the app logs them as such, never as a server error.
 */
export async function readBody(
  request: Request,
  maxBytes: number,
  timeoutMs = BODY_TIMEOUT_MS,
): Promise<Uint8Array> {
  const tooLarge = () =>
    new HttpError(413, "payload_too_large", `Request body is larger than ${maxBytes} bytes`);
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > maxBytes) {
    await request.body?.cancel();
    throw tooLarge();
  }
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  let late = false;
  const timer = setTimeout(() => {
    late = true;
    reader.cancel().catch(() => {}); // the pending read ends
  }, timeoutMs);
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        if (late) break;
        throw new HttpError(
          400,
          "incomplete_body",
          `The request body was cut off after ${size} bytes: ${(error as Error).message}`,
        );
      }
      if (late || chunk.done) break;
      size += chunk.value.byteLength;
      if (size > maxBytes) {
        await reader.cancel();
        throw tooLarge();
      }
      chunks.push(chunk.value);
    }
  } finally {
    clearTimeout(timer);
  }
  if (late) {
    throw new HttpError(
      408,
      "request_timeout",
      `The request body did not arrive within ${timeoutMs} ms (${size} bytes received)`,
      {},
      { connection: "close" },
    );
  }
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

/** True when an `If-None-Match` header value names `etag` (weak or strong) or is `*`. */
export function etagMatches(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  return ifNoneMatch.split(",").some((candidate) => {
    const tag = candidate.trim();
    return tag === "*" || tag === etag || tag === `W/${etag}`;
  });
}
