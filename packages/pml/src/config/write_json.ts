import { dirname, join } from "node:path";

/** Writes `data` to `path` atomically: a temp file in the same directory, then rename. */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  const dir = dirname(path);
  await Deno.mkdir(dir, { recursive: true });
  const tmp = join(dir, `.${crypto.randomUUID()}.tmp`);
  try {
    if (typeof data === "string") await Deno.writeTextFile(tmp, data);
    else await Deno.writeFile(tmp, data);
    await Deno.rename(tmp, path);
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw err;
  }
}

/**
 * Writes `.pml.json` content that a human decided on the terminal (`pml import`): atomically, and
 * as a change that keeps the workspace trusted (DESIGN §13 "Workspace trust"). This is the one
 * seam where the trust store records the new content once it exists.
 */
export async function writeHumanConfig(path: string, text: string): Promise<void> {
  await writeFileAtomic(path, text);
}

/** Reads a JSON object file; `undefined` when it does not exist. */
export async function readJsonObject(path: string): Promise<Record<string, unknown> | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
  const value = JSON.parse(text);
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    throw new TypeError(`${path} does not hold a JSON object`);
  }
  return value;
}
