/**
 * What a writing std call may not leave behind (docs/security.md): the control and protected files
 * a shell command created where none existed, the guarded files it changed behind the Landlock wall
 * (which cannot bind them read-only), and the scripts of a `package.json` the host runs without
 * being named. Each is put back, audited, and said in a note at the top of the result.
 *
 * @module
 */
import { basename } from "node:path";
import type { AuditLog } from "../../audit/audit.ts";
import { guardedPathHit, guardedPaths, scanOf } from "../../config/control_files.ts";
import { restoreGatedParts, type ScriptsPart, scriptsParts } from "../../config/package_scripts.ts";
import { missingGuarded, settleCreatedGuarded } from "./created_guarded.ts";
import { type GuardedSnapshot, restoreGuarded, snapshotGuarded } from "./kept_guarded.ts";

/** What a writing call is compared against after it (`GuardedWrites.before`). */
export interface BeforeWrites {
  /** A shell command's guarded paths, from a walk of its folders at most a second old. */
  readonly guarded: readonly string[];
  /** Those that did not exist. */
  readonly missing: readonly string[];
  /** When the command started (ms). */
  readonly at: number;
  /** The scripts of the `package.json` files the call may change. */
  readonly scripts: ReadonlyMap<string, ScriptsPart | undefined>;
  /** Behind the Landlock wall: the guarded files that existed, as they were (shell only). */
  readonly kept?: GuardedSnapshot;
}

/** The std tool's declared access and the names of its path arguments. */
export interface WriteTool {
  readonly access: "read" | "write" | "run";
  readonly paths: readonly string[];
}

/** Watches the guarded files of the write roots around one std call. */
export class GuardedWrites {
  readonly #roots: () => string[];
  readonly #audit: AuditLog;
  readonly #landlock: () => boolean;

  constructor(deps: {
    /** The write roots: the workspace and the `sandbox.write` grants. */
    roots: () => string[];
    audit: AuditLog;
    /** Whether the OS sandbox is the Landlock wall (asked only for a shell command). */
    landlock: () => boolean;
  }) {
    this.#roots = deps.roots;
    this.#audit = deps.audit;
    this.#landlock = deps.landlock;
  }

  /**
   * What a writing call is compared against after it: for a shell command, the guarded files (a
   * fresh walk of the write roots) and which of them did not exist yet (a bind cannot protect
   * them, so they are watched), the scripts of every `package.json`, and behind Landlock the
   * existing guarded files as they are; for a write tool, the scripts of a `package.json` it names.
   */
  before(tool: WriteTool, args: Record<string, unknown>): BeforeWrites {
    if (tool.access === "read") return { guarded: [], missing: [], scripts: new Map(), at: 0 };
    if (tool.access === "write") {
      const named = tool.paths.map((name) => args[name])
        .filter((p): p is string => typeof p === "string" && basename(p) === "package.json");
      return { guarded: [], missing: [], scripts: scriptsParts(named), at: 0 };
    }
    const roots = this.#roots();
    // The walk the call's policy uses (at most a second old): what it missed and the command left
    // alone is told apart after it by its change time.
    const at = Date.now();
    const guarded = guardedPaths(roots);
    const packages = roots.flatMap((root) => scanOf(root).packageJsons);
    const scripts = scriptsParts(packages);
    // Behind Landlock the existing ones cannot be bound read-only: kept, and put back after.
    const kept = this.#landlock() ? snapshotGuarded(guardedPaths(roots), roots) : undefined;
    return { guarded, missing: missingGuarded(guarded), scripts, at, ...(kept ? { kept } : {}) };
  }

  /**
   * After the call: removes what it created, puts back what it changed (see the module), audits
   * each and returns the note for the result, or "".
   */
  async after(toolId: string, before: BeforeWrites): Promise<string> {
    return await this.#settleCreated(toolId, before) +
      (before.kept ? await this.#restoreKept(toolId, before.kept) : "");
  }

  /** Puts back the guarded files a command changed (Landlock), audits it, says so. */
  async #restoreKept(toolId: string, kept: GuardedSnapshot): Promise<string> {
    const restored = restoreGuarded(kept);
    const roots = this.#roots();
    for (const path of restored) {
      const hit = guardedPathHit(path, roots);
      await this.#audit.write(
        hit?.kind === "control" ? "control_file_blocked" : "protected_file_blocked",
        { tool: toolId, path, action: "changed by the command; restored" },
      );
    }
    return restored.length
      ? `[pml: restored ${restored.map((p) => `"${p}"`).join(", ")}: control files and files ` +
        `your tools run later are not for tools to change]\n`
      : "";
  }

  /**
   * Removes the control and protected files a shell command created where none existed (the OS
   * sandbox binds only existing ones read-only; a new repository's checked config and hooks stay)
   * and puts back the gated scripts of a `package.json`, audits it and says so.
   */
  async #settleCreated(toolId: string, before: BeforeWrites): Promise<string> {
    const roots = this.#roots();
    let wereMissing = before.missing;
    let packages: string[] = [];
    if (before.guarded.length) {
      // What the command made of its folders: new git dirs, gitfiles, instruction files.
      const known = new Set(before.guarded);
      const now = guardedPaths(roots, { fresh: true });
      const made = now.filter((path) => !known.has(path) && changedSince(path, before.at));
      wereMissing = [...before.missing, ...made];
      packages = roots.flatMap((root) => scanOf(root).packageJsons);
    }
    const settled = await settleCreatedGuarded(wereMissing);
    const removed = settled.filter((s) => s.outcome === "removed");
    for (const { path, why } of removed) {
      const hit = guardedPathHit(path, roots);
      await this.#audit.write(
        hit?.kind === "control" ? "control_file_blocked" : "protected_file_blocked",
        { tool: toolId, path, action: `created by the command; removed${why ? ` (${why})` : ""}` },
      );
    }
    const restored = restoreGatedParts(before.scripts, packages);
    for (const { path, keys } of restored) {
      await this.#audit.write("protected_file_blocked", {
        tool: toolId,
        path,
        action: `changed ${keys.join(", ")}; put back`,
      });
    }
    const notes: string[] = [];
    if (removed.length) {
      notes.push(
        `[pml: removed ${
          removed.map((r) => `"${r.path}"${r.why ? ` (${r.why})` : ""}`).join(", ")
        }: control files, files your tools run later (git config, hooks and git dirs, shell rc ` +
          `files, package manager, editor and agent settings) and instruction files are not for ` +
          `tools to create]\n`,
      );
    }
    if (restored.length) {
      notes.push(
        `[pml: put back ${
          restored.map((r) => `${r.keys.map((k) => `"${k}"`).join(", ")} of "${r.path}"`).join("; ")
        }: scripts the host runs without being named (install and prepare scripts, pre/post ` +
          `hooks, packageManager) are the human's to change; the rest of the file is as written]\n`,
      );
    }
    return notes.join("");
  }
}

/**
 * Whether the entry `path` was created or changed at or after `at` (ms), by its change time (which
 * no program can set back, unlike its modification time; kept in whole seconds here, so the second
 * of `at` counts). A missing entry counts: nothing to keep.
 */
function changedSince(path: string, at: number): boolean {
  try {
    const ctime = Deno.lstatSync(path).ctime?.getTime();
    return ctime === undefined || ctime >= Math.floor(at / 1000) * 1000;
  } catch {
    return true;
  }
}
