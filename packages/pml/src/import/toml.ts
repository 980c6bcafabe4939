/**
 * TOML (Codex's `config.toml`) parsed by `smol-toml`, imported with the first TOML file
 * `pml import` reads. The specifier is bare: `deno bundle` inlines the local modules of the npm
 * package's `pml.js` eagerly, so a static import here would load the parser at every `pml stdio`
 * start.
 */
type SmolToml = typeof import("smol-toml");

let loading: Promise<SmolToml> | undefined;

/** `text` parsed as TOML; throws smol-toml's error (its message says where) when it is not. */
export async function parseToml(text: string): Promise<Record<string, unknown>> {
  const { parse } = await (loading ??= import("smol-toml"));
  return parse(text);
}
