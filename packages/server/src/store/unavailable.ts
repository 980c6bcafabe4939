/**
 * `StoreUnavailableError`: the store cannot be reached now (the database is down, refuses
 * connections or does not answer within its deadline). Routes let it through; the app answers it
 * as `503 store_unavailable` with `Retry-After`, never as an internal error.
 *
 * @module
 */

/** The store did not answer: a condition of the deployment, not a bug of the request. */
export class StoreUnavailableError extends Error {
  /** Stable error code of the HTTP answer. */
  readonly code = "store_unavailable";

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "StoreUnavailableError";
  }
}
