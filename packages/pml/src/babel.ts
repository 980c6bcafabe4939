/**
 * `@babel/parser`, imported on first use. Loading it takes ~16 ms, which `pml stdio` should not
 * spend before it answers `initialize`: only `pml:execute` code and registry modules are parsed.
 *
 * @module
 */
let loading: Promise<typeof import("@babel/parser")> | undefined;

/** The `@babel/parser` module (imported once per process). */
export function babelParser(): Promise<typeof import("@babel/parser")> {
  return loading ??= import("@babel/parser");
}
