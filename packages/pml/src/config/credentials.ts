import { join } from "node:path";
import { writeFileAtomic } from "../config/write_json.ts";

/** Where `pml init --api-key` stores the key: outside every project, readable by the user only. */
export function credentialsPath(pmlHome: string): string {
  return join(pmlHome, "credentials.json");
}

/** Stores the API key in `~/.pml/credentials.json` with mode 0600. */
export async function saveApiKey(pmlHome: string, apiKey: string): Promise<string> {
  const path = credentialsPath(pmlHome);
  await writeFileAtomic(path, JSON.stringify({ apiKey }, null, 2) + "\n");
  await Deno.chmod(path, 0o600);
  return path;
}

/** Reads the stored API key, if any. */
export function readApiKey(pmlHome: string): string | undefined {
  try {
    const value = JSON.parse(Deno.readTextFileSync(credentialsPath(pmlHome)));
    return typeof value?.apiKey === "string" && value.apiKey ? value.apiKey : undefined;
  } catch {
    return undefined;
  }
}
