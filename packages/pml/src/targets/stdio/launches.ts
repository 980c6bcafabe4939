/**
 * How a stdio server is started: the launch spec of an install recorded for exactly its metadata
 * (verified), the install itself (an npm package pinned and verified, or a raw command recorded),
 * the `dependency` question that comes before, and the OS wall it runs behind. The protocol of a
 * running server is the `UpstreamSession`'s.
 *
 * @module
 */
import { join, relative } from "node:path";
import type { AuditLog } from "../../audit/audit.ts";
import type { DepsState } from "../../deps/deps_state.ts";
import type { InstalledPackage, Installer } from "../../deps/installer.ts";
import {
  denoLaunch,
  type LaunchSpec,
  missingEnv,
  missingEnvMessage,
  osWallRefusal,
} from "../../deps/launch.ts";
import { commandLaunch } from "../../deps/command_launch.ts";
import { detectOsSandbox, type OsSandboxStatus } from "../../sandbox/detect_os_sandbox.ts";
import { type DependencyMeta, unpinnedWarning } from "../../deps/metadata.ts";
import { describeDenoGrants } from "../../deps/grants.ts";
import { isPmlError, PmlError } from "../../errors.ts";
import type { ApprovalRequest } from "../../permission/approvals.ts";
import type { CallToolResult } from "../../sdk/types.ts";
import { type CallContext, errorResult, type Preflight, type PreflightRefusal } from "../target.ts";

/** What {@link StdioLaunches} needs (a part of `StdioTargetDeps`). */
export interface StdioLaunchDeps {
  readonly installer: Installer;
  readonly state: DepsState;
  readonly audit: AuditLog;
  readonly workspace: string;
  /** Environment snapshot: declared variables are taken from here. */
  readonly env: Readonly<Record<string, string>>;
  /** Where npm packages are installed, one folder per `<server>@<version>`. */
  readonly depsDir: string;
  readonly denoPath: string;
  readonly denoDir: string;
  /** `.pml.json` `sandbox.unconfined`: npm servers may run without the OS sandbox. */
  readonly unconfined?: boolean;
  /** Injectable for tests (default: look for bubblewrap once). */
  readonly osSandbox?: OsSandboxStatus;
  /** `.pml.json` `sandbox.deny`: secrets hidden besides the built-in ones. */
  readonly deny?: readonly string[];
}

/** See the module documentation. */
export class StdioLaunches {
  readonly #d: StdioLaunchDeps;
  #osStatus?: OsSandboxStatus;
  /**
   * Verified launch specs, by server, with the metadata version they were made for and the
   * metadata object that passed the call's checks (env, OS wall, pins) when it was set: a call with
   * that same object runs without them (the target's warm path, {@link StdioLaunches.warm}).
   */
  readonly #ready = new Map<string, { pin: string; spec: LaunchSpec; meta: DependencyMeta }>();
  readonly #installs = new Map<string, Promise<LaunchSpec>>();

  constructor(deps: StdioLaunchDeps) {
    this.#d = deps;
  }

  /** The spec made for exactly this metadata object, when there is one (no check to run again). */
  warm(meta: DependencyMeta): LaunchSpec | undefined {
    const ready = this.#ready.get(meta.server);
    return ready?.meta === meta ? ready.spec : undefined;
  }

  /** The spec made for this metadata's pin (the object taken as the checked one), if any. */
  readyFor(meta: DependencyMeta): LaunchSpec | undefined {
    const ready = this.#ready.get(meta.server);
    if (ready?.pin !== pinOf(meta)) return undefined;
    if (ready.meta !== meta) this.#ready.set(meta.server, { ...ready, meta });
    return ready.spec;
  }

  /** {@link StdioLaunches.readyFor} without taking `meta` as the checked object. */
  isReady(meta: DependencyMeta): boolean {
    return this.#ready.get(meta.server)?.pin === pinOf(meta);
  }

  setReady(meta: DependencyMeta, spec: LaunchSpec): void {
    this.#ready.set(meta.server, { pin: pinOf(meta), spec, meta });
  }

  dropReady(server: string): void {
    this.#ready.delete(server);
  }

  /** {@link StdioLaunches.install}, once at a time per server; the spec is then ready. */
  async installOnce(meta: DependencyMeta, ctx: Pick<CallContext, "progress">): Promise<LaunchSpec> {
    let pending = this.#installs.get(meta.server);
    if (!pending) {
      pending = this.install(meta, ctx).finally(() => this.#installs.delete(meta.server));
      this.#installs.set(meta.server, pending);
    }
    const spec = await pending;
    this.setReady(meta, spec);
    return spec;
  }

  /**
   * A failed install or check as the call's result; an integrity mismatch also forgets the install
   * and is audited. Anything but a `PmlError` is thrown on.
   */
  async refuse(meta: DependencyMeta, err: unknown): Promise<CallToolResult> {
    if (!isPmlError(err)) throw err;
    if (err.code === "INTEGRITY_MISMATCH") {
      this.#ready.delete(meta.server);
      await this.#d.state.forget(meta.server);
      await this.#d.audit.write("integrity", {
        server: meta.server,
        ...err.details,
        result: "refused",
      });
    }
    return errorResult(err.message, { status: "error", code: err.code, ...err.details });
  }

  /**
   * For the gateway's question about an `ask` tool of `meta`: the `dependency` approval its call
   * would ask next (a first install or first run), so that one question names both; a refusal
   * when the call cannot run whatever the answer (a missing variable). `undefined` when nothing
   * would be asked (installed already, or the call is refused before any question).
   */
  async preflight(meta: DependencyMeta): Promise<Preflight | PreflightRefusal | undefined> {
    const missing = missingEnv(meta, this.#d.env);
    if (missing.length) {
      return {
        refusal: { code: "api_key_required", message: missingEnvMessage(meta.server, missing) },
      };
    }
    if (this.wallRefusal(meta)) return undefined;
    const warning = unpinnedOf(meta);
    // Installed already: nothing to set up, but an unpinned package is said in every question.
    const installed: Preflight | undefined = warning
      ? { description: warning + ".", context: { warning } }
      : undefined;
    if (this.isReady(meta)) return installed;
    if (await this.recorded(meta).catch(() => "refused")) return installed;
    const request = this.dependencyRequest(meta);
    const { what, grants } = this.whatRuns(meta);
    return {
      description: (warning ? `${warning}. ` : "") +
        `Its first use ${meta.package ? "installs" : "runs"} ${what} (${grants}).`,
      context: { dependency: request.context },
      covers: request,
    };
  }

  /**
   * Why `meta` cannot run here (no OS sandbox and `.pml.json` does not accept it unconfined), or
   * `undefined`.
   */
  wallRefusal(meta: DependencyMeta): string | undefined {
    return osWallRefusal(
      meta.server,
      this.#os(),
      this.#d.unconfined ?? false,
    );
  }

  /** The OS sandbox this machine offers, found on the configured PATH once (asked on every call). */
  #os(): OsSandboxStatus {
    return this.#osStatus ??= this.#d.osSandbox ?? detectOsSandbox(this.#d.env.PATH);
  }

  /**
   * The `dependency` question: everything that will be installed or run and what it may touch
   * (package, version, integrity, grants), asked once per install.
   */
  dependencyRequest(meta: DependencyMeta): ApprovalRequest {
    const { what, grants } = this.whatRuns(meta);
    const warning = unpinnedOf(meta);
    return {
      type: "dependency",
      description: (warning ? `${warning}. ` : "") +
        (meta.package ? `Install ${what} (${grants})?` : `Run ${what}? (${grants})`),
      context: {
        ...(warning ? { warning } : {}),
        server: meta.server,
        fqdn: meta.fqdn,
        package: meta.package,
        command: [meta.command, ...meta.args],
        permissions: meta.permissions,
        envRequired: meta.envRequired,
        warnings: meta.warnings,
        source: meta.source,
      },
    };
  }

  /**
   * What runs (`memory@1.0.0`, or `x with "uvx x"`) and, in words, the package, its integrity and
   * the grants it runs with.
   */
  whatRuns(meta: DependencyMeta): { what: string; grants: string } {
    const pkg = meta.package;
    if (!pkg) {
      return {
        what: `${meta.server} with "${[meta.command, ...meta.args].join(" ")}"`,
        grants: rawCommandGrants(meta, this.#os()),
      };
    }
    return {
      what: `${meta.server}@${pkg.version}`,
      grants:
        `npm package ${pkg.name}@${pkg.version}, integrity ${pkg.integrity ?? "NOT PINNED"}; ` +
        `run under Deno with only these grants: ${describeDenoGrants(meta)}`,
    };
  }

  /** The launch spec of an install recorded for exactly this metadata, verified; else undefined. */
  async recorded(meta: DependencyMeta): Promise<LaunchSpec | undefined> {
    const rec = await this.#d.state.get(meta.server);
    if (!meta.package) {
      const same = rec?.mode === "command" &&
        JSON.stringify(rec.command) === JSON.stringify([meta.command, ...meta.args]);
      return same ? commandLaunch(meta, this.#d) : undefined;
    }
    const pkg = meta.package;
    if (
      rec?.mode !== "deno" || rec.package !== pkg.name || rec.version !== pkg.version ||
      (pkg.integrity !== undefined && rec.integrity !== pkg.integrity)
    ) {
      return undefined;
    }
    const installed = await this.#d.installer.inspect(pkg, this.#dirOf(meta));
    return installed ? this.#denoSpec(meta, installed) : undefined;
  }

  async install(
    meta: DependencyMeta,
    ctx: Pick<CallContext, "progress">,
  ): Promise<LaunchSpec> {
    const installedAt = new Date().toISOString();
    if (!meta.package) {
      await this.#d.state.record(meta.server, {
        mode: "command",
        command: [meta.command, ...meta.args],
        installedAt,
      });
      return commandLaunch(meta, this.#d);
    }
    const dir = this.#dirOf(meta);
    const installed = await this.#d.installer.install(
      meta.package,
      dir,
      async (step, total, message) => {
        await ctx.progress?.(step, total, message).catch(() => {});
      },
    );
    await this.#d.state.record(meta.server, {
      mode: "deno",
      package: meta.package.name,
      version: meta.package.version,
      integrity: installed.integrity,
      dir: relative(this.#d.workspace, dir),
      installedAt,
    });
    await this.#d.audit.write("integrity", {
      server: meta.server,
      package: meta.package.name,
      version: meta.package.version,
      integrity: installed.integrity,
      result: "verified",
    });
    return this.#denoSpec(meta, installed);
  }

  #denoSpec(meta: DependencyMeta, installed: InstalledPackage): LaunchSpec {
    return denoLaunch(meta, installed, this.#d);
  }

  #dirOf(meta: DependencyMeta): string {
    if (!meta.package) throw new PmlError("METADATA_INVALID", `${meta.server} has no npm package`);
    return join(this.#d.depsDir, `${meta.server}@${meta.package.version}`);
  }
}

/** What a raw command will be able to do, for its approval question. */
function rawCommandGrants(meta: DependencyMeta, os: OsSandboxStatus): string {
  if (!os.available) return "a raw command, nothing pinned: runs UNCONFINED with your home";
  const { write, net } = meta.permissions;
  return "a raw command, nothing pinned: runs in the OS sandbox, reads the workspace" +
    (write.length ? `, writes ${write.join(", ")}` : ", writes only its own private home") +
    (net.length ? `, network to ${net.join(", ")} only (through PML's proxy)` : ", no network");
}

/** The loud warning for a package without pinned integrity (private_mcps, development), if any. */
export function unpinnedOf(meta: DependencyMeta): string | undefined {
  return meta.package && meta.package.integrity === undefined
    ? unpinnedWarning(meta.server, meta.package)
    : undefined;
}

/** What identifies an install: the package pinned, or the raw command. */
export function pinOf(meta: DependencyMeta): string {
  return meta.package
    ? `${meta.package.name}@${meta.package.version}#${meta.package.integrity ?? "unpinned"}`
    : JSON.stringify([meta.command, ...meta.args]);
}
