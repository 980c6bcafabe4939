/**
 * Assertions for tests, in the shape of Deno's std/assert (which is only on JSR, not reachable
 * here), built on `node:assert`.
 */
import nodeAssert from "node:assert/strict";

export function assert(value: unknown, message?: string): asserts value {
  nodeAssert.ok(value, message as string);
}

export function assertEquals<T>(
  actual: unknown,
  expected: T,
  message?: string,
): asserts actual is T {
  nodeAssert.deepStrictEqual(actual, expected, message as string);
}

export function assertNotEquals(actual: unknown, expected: unknown, message?: string): void {
  nodeAssert.notDeepStrictEqual(actual, expected, message as string);
}

export function assertMatch(actual: string, expected: RegExp, message?: string): void {
  nodeAssert.match(actual, expected, message as string);
}

export function assertStringIncludes(actual: string, expected: string, message?: string): void {
  nodeAssert.ok(
    actual.includes(expected),
    message ?? `Expected ${JSON.stringify(actual)} to include ${JSON.stringify(expected)}`,
  );
}

type ErrorClass = abstract new (...args: never[]) => Error;

function check(err: unknown, cls?: ErrorClass, includes?: string): Error {
  nodeAssert.ok(err instanceof Error, `Expected an Error, got ${String(err)}`);
  if (cls) {
    nodeAssert.ok(err instanceof cls, `Expected ${cls.name}, got ${err.name}: ${err.message}`);
  }
  if (includes) {
    nodeAssert.ok(
      err.message.includes(includes),
      `Expected message to include "${includes}": ${err.message}`,
    );
  }
  return err;
}

/** Asserts that `fn` throws (optionally an instance of `cls` whose message includes `includes`). */
export function assertThrows(fn: () => unknown, cls?: ErrorClass, includes?: string): Error {
  try {
    fn();
  } catch (err) {
    return check(err, cls, includes);
  }
  throw new nodeAssert.AssertionError({ message: "Expected function to throw" });
}

/** Async {@link assertThrows}. */
export async function assertRejects(
  fn: () => Promise<unknown>,
  cls?: ErrorClass,
  includes?: string,
): Promise<Error> {
  try {
    await fn();
  } catch (err) {
    return check(err, cls, includes);
  }
  throw new nodeAssert.AssertionError({ message: "Expected promise to reject" });
}
