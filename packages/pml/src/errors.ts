/**
 * The one error type for conditions that callers handle. `code` is stable and machine-readable;
 * the message states the failed action and quotes the values involved.
 *
 * @example
 * ```ts
 * throw new PmlError("PATH_OUTSIDE_WORKSPACE", `Cannot read "../x": path is outside the workspace "/home/a/proj"`);
 * ```
 */
export class PmlError extends Error {
  readonly code: string;
  readonly details?: Record<string, unknown>;

  constructor(
    code: string,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "PmlError";
    this.code = code;
    this.details = options?.details;
  }
}

/** True when `err` is a {@link PmlError}, optionally with the given code. */
export function isPmlError(err: unknown, code?: string): err is PmlError {
  return err instanceof PmlError && (code === undefined || err.code === code);
}

/** A message for any thrown value. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
