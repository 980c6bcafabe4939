/**
 * The part of `package.json` the host runs without the user naming it (DESIGN §13 "Protected
 * files", the host-run class): npm's lifecycle scripts (`preinstall`, `install`, `postinstall`,
 * `prepare`, `prepublish`, `dependencies`, …), every `pre<x>`/`post<x>` hook of a script or an npm
 * command (`npm test` also runs `pretest` and `posttest`), and `packageManager` (corepack fetches and runs the package manager it
 * names). Editing the rest of the file (dependencies, the scripts one runs by name) is ordinary
 * work; a change of these keys by a tool or a sandboxed command is undone after the call, key by
 * key, and the result says so.
 *
 * @module
 */

/** npm's lifecycle scripts that run on `install`, `ci`, `pack`, `publish` without being named. */
const LIFECYCLE: ReadonlySet<string> = new Set([
  "install",
  "prepare",
  "prepublish",
  "prepack",
  "dependencies",
  "uninstall",
  "version",
  "publish",
  "pack",
  "shrinkwrap",
  "restart",
]);

/** Commands of npm whose `pre`/`post` hooks run with them (besides the lifecycle ones). */
const HOOKED: ReadonlySet<string> = new Set([...LIFECYCLE, "test", "start", "stop", "ci"]);

/**
 * True for a script key the host runs without its name being asked for: a lifecycle script, or a
 * `pre<x>`/`post<x>` hook of a script of the same file or of an npm command (`preview` is no hook
 * unless there is a `view` script).
 */
export function isUnnamedScript(key: string, scripts: Readonly<Record<string, unknown>>): boolean {
  if (LIFECYCLE.has(key)) return true;
  for (const prefix of ["pre", "post"]) {
    const rest = key.slice(prefix.length);
    if (key.startsWith(prefix) && rest && (HOOKED.has(rest) || Object.hasOwn(scripts, rest))) {
      return true;
    }
  }
  return false;
}

/** What of one `package.json` is compared: its scripts and `packageManager`, each as JSON. */
export type ScriptsPart = Readonly<Record<string, string>>;

/**
 * The scripts (`"scripts.<key>"`) and `packageManager` of the `package.json` at `path`; `{}` for a
 * missing file, `undefined` for one that is no JSON object (npm refuses to run it anyway: nothing
 * to compare).
 */
export function scriptsPart(path: string): ScriptsPart | undefined {
  let pkg: unknown;
  try {
    pkg = JSON.parse(Deno.readTextFileSync(path));
  } catch (err) {
    return err instanceof Deno.errors.NotFound ? {} : undefined;
  }
  if (!isRecord(pkg)) return undefined;
  const out: Record<string, string> = {};
  if (isRecord(pkg.scripts)) {
    for (const [key, value] of Object.entries(pkg.scripts)) {
      out[`scripts.${key}`] = JSON.stringify(value);
    }
  }
  if (pkg.packageManager !== undefined) out.packageManager = JSON.stringify(pkg.packageManager);
  return out;
}

/** The parts of `paths` before a call, to compare after it. */
export function scriptsParts(paths: readonly string[]): Map<string, ScriptsPart | undefined> {
  return new Map(paths.map((path) => [path, scriptsPart(path)]));
}

/** One `package.json` whose gated part a call changed, and the keys put back. */
export interface RestoredScripts {
  readonly path: string;
  readonly keys: readonly string[];
}

/** The names of the scripts a part holds, as the hooks check wants them. */
function scriptNames(part: ScriptsPart): Record<string, true> {
  return Object.fromEntries(
    Object.keys(part).filter((k) => k.startsWith("scripts.")).map((k) => [k.slice(8), true]),
  );
}

/**
 * Puts back the gated keys (unnamed scripts, `packageManager`) a call changed in each
 * `package.json` of `before`, and in those of `after` it created (their gated keys removed),
 * leaving the rest of each file as the call wrote it.
 */
export function restoreGatedParts(
  before: ReadonlyMap<string, ScriptsPart | undefined>,
  after: readonly string[] = [],
): RestoredScripts[] {
  const out: RestoredScripts[] = [];
  for (const path of new Set([...before.keys(), ...after])) {
    const was = before.has(path) ? before.get(path) : {};
    const now = scriptsPart(path);
    if (was === undefined || now === undefined) continue;
    const names = { ...scriptNames(was), ...scriptNames(now) };
    const gated = (key: string) => key === "packageManager" || isUnnamedScript(key.slice(8), names);
    const keys = [...new Set([...Object.keys(was), ...Object.keys(now)])]
      .filter((k) => was[k] !== now[k] && gated(k));
    if (keys.length === 0) continue;
    const text = Deno.readTextFileSync(path);
    const pkg = JSON.parse(text) as Record<string, unknown>;
    for (const key of keys) {
      const old = was[key] === undefined ? undefined : JSON.parse(was[key]);
      const [holder, name] = key === "packageManager"
        ? [pkg, key]
        : [isRecord(pkg.scripts) ? pkg.scripts : (pkg.scripts = {}), key.slice(8)];
      if (old === undefined) delete (holder as Record<string, unknown>)[name];
      else (holder as Record<string, unknown>)[name] = old;
    }
    const indent = /^\{\r?\n([ \t]+)/.exec(text)?.[1] ?? "  ";
    const end = text.endsWith("\n") ? "\n" : "";
    Deno.writeTextFileSync(path, JSON.stringify(pkg, null, indent) + end);
    out.push({ path, keys });
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
