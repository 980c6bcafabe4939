/**
 * `GET /health`: 200 when the store answers, 503 otherwise (`"error": "store_unavailable"`). For
 * load balancer probes. During an outage the store answers at once that it is down (see
 * `postgres_store.ts`), so the probe does too.
 *
 * @module
 */
import { jsonResponse } from "../http.ts";
import type { Store } from "../store/store.ts";

/** Server package version reported by `/health`. */
export const SERVER_VERSION = "0.1.0";

/** Pings the store and reports `{status, store, version}`. */
export async function serveHealth(store: Store): Promise<Response> {
  const headers = { "cache-control": "no-store" };
  try {
    await store.ping();
    return jsonResponse(200, { status: "ok", store: store.kind, version: SERVER_VERSION }, headers);
  } catch (error) {
    return jsonResponse(503, {
      status: "error",
      error: "store_unavailable",
      store: store.kind,
      version: SERVER_VERSION,
      message: `Store "${store.kind}" does not answer: ${(error as Error).message}`,
    }, headers);
  }
}
