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
