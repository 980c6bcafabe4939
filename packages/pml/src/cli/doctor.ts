/**
 * `pml doctor`: which OS wall is in force on this machine and why, what the canary of that wall
 * got here (the probes of `sandbox/seatbelt_canary.ts`, under that wall), what the wall holds and does not (docs/security.md "What holds
 * under each wall"), and what to install or change for a stronger one. Exit code 0 when a wall is
 * in force and its canary passed, 1 otherwise.
 *
 * @module
 */
import { join } from "node:path";
import { loadConfig } from "../config/config.ts";
import type { CliIo } from "./io.ts";
import { bwrapArgs } from "../sandbox/os_sandbox.ts";
import {
  detectOsSandbox,
  type OsSandboxStatus,
  wallChoice,
  wallName,
} from "../sandbox/detect_os_sandbox.ts";
import {
  CANARY_EXPECTED,
  CANARY_PROBES,
  CANARY_WORDS,
  type CanaryOutcomes,
  type CanaryProbe,
  type CanaryWrap,
  probeRunner,
  sandboxExecWrap,
} from "../sandbox/seatbelt_canary.ts";
import { landlockCommand } from "../sandbox/landlock_command.ts";
import { createGroup } from "../sandbox/cgroup.ts";
import { WALL_HOLDS, type WallRow } from "../sandbox/wall_holds.ts";

type Wall = ReturnType<typeof wallName>;

/** The canary of the wall in force: what each probe came to, and the verdict. */
export interface DoctorCanary {
  readonly outcomes: CanaryOutcomes;
  /** Every probe came to what the wall must give (see {@link doctorVerdict}). */
  readonly ok: boolean;
  /** The probes that did not, in words. */
  readonly failed: readonly string[];
  /** What the wall holds otherwise, or does not test here. */
  readonly notes: readonly string[];
}

/** What `pml doctor --json` prints. */
export interface DoctorReport {
  readonly wall: Wall;
  /** Why this wall (and not a stronger one). */
  readonly why: string;
  readonly landlockAbi?: number;
  readonly canary?: DoctorCanary;
  /** What the wall holds, and what it does not, line by line. */
  readonly holds: readonly string[];
  readonly doesNotHold: readonly string[];
  /** What to install or change for a stronger wall. */
  readonly advice: readonly string[];
}

/** `pml doctor [--json]`. */
export function runDoctor(io: CliIo, opts: { json: boolean }): number {
  const config = loadConfig({ env: io.env, cwd: io.cwd, home: io.home });
  const os = detectOsSandbox(config.env.PATH, wallChoice(config.env.PML_SANDBOX_WALL));
  const report = doctorReport(os);
  if (opts.json) io.stdout(JSON.stringify(report, null, 2) + "\n");
  else io.stdout(doctorText(report));
  return report.wall !== "none" && report.canary?.ok ? 0 : 1;
}

/**
 * How the canary (`seatbelt_canary.ts`, the probes of Seatbelt's self-test) is confined by `os`:
 * the same policy rendered for that wall.
 */
function canaryWrap(os: Extract<OsSandboxStatus, { available: true }>): CanaryWrap {
  if ("bwrap" in os) {
    return (scene, command) => [
      os.bwrap,
      ...bwrapArgs({ ...scene.policy, net: [] }, scene.workspace, command),
    ];
  }
  if ("seatbelt" in os) return sandboxExecWrap;
  return (scene, command) => {
    // The proxy's ports, where the launcher reads them (`net_proxy.ts` writes this file).
    const netDir = join(scene.root, "net");
    Deno.mkdirSync(netDir);
    Deno.writeTextFileSync(join(netDir, "ports"), `${scene.proxyPort} ${scene.proxyPort}\n`);
    const { program, args } = landlockCommand(os.landlock, scene.policy, command, {
      netDir,
      privateDir: scene.tmp,
    });
    return [program, ...args];
  };
}

/**
 * Each probe against what it must come to, with what a wall gives in its own way: bubblewrap
 * reaches its proxy through a bridge into its network namespace, not a loopback port (that probe
 * does not apply); Landlock cannot keep a protected file read-only during a command (the std
 * target puts it back after each).
 */
export function doctorVerdict(outcomes: CanaryOutcomes, wall: Wall): DoctorCanary {
  const failed: string[] = [];
  const notes: string[] = [];
  for (const probe of CANARY_PROBES) {
    const done = outcomes[probe]?.done ?? false;
    if (done === (CANARY_EXPECTED[probe] === "done")) continue;
    if (wall === "bubblewrap" && probe === "reach-proxy") {
      notes.push("its proxy is reached through a bridge inside its own network namespace");
    } else if (wall === "landlock" && probe === "write-protected") {
      notes.push(
        "a protected file (.git/config) is writable during a command; PML puts it back after each",
      );
    } else failed.push(said(probe, outcomes));
  }
  return { outcomes, ok: failed.length === 0, failed, notes };
}

function said(probe: CanaryProbe, outcomes: CanaryOutcomes): string {
  const detail = outcomes[probe]?.detail;
  return `${CANARY_EXPECTED[probe] === "refused" ? "could" : "could not"} ${CANARY_WORDS[probe]}` +
    (detail ? ` (${detail})` : "");
}

/** The report for the wall `os` names, its canary run here. */
export function doctorReport(os: OsSandboxStatus): DoctorReport {
  const wall = wallName(os);
  const why = !os.available
    ? os.reason
    : "bwrap" in os
    ? `bubblewrap (${os.bwrap}) builds its namespaces here`
    : "seatbelt" in os
    ? `Seatbelt's self-test passed on this Mac (${os.canary})`
    : `bubblewrap is not used: ${os.why}`;
  const canary = os.available ? doctorVerdict(probeRunner(canaryWrap(os))(), wall) : undefined;
  const abi = os.available && "landlock" in os ? os.landlock : undefined;
  const cell = (row: WallRow) => wall === "landlock" ? row.landlock(abi ?? 0) : row[wall];
  return {
    wall,
    why,
    ...(abi !== undefined ? { landlockAbi: abi } : {}),
    ...(canary ? { canary } : {}),
    holds: WALL_HOLDS.filter((row) => cell(row).holds).map((row) =>
      `${row.what}: ${cell(row).how}`
    ),
    doesNotHold: WALL_HOLDS.filter((row) => !cell(row).holds).map((row) =>
      `${row.what}: ${cell(row).how}`
    ),
    advice: advice(os),
  };
}

/** What to install or change for a stronger wall than `os`. */
function advice(os: OsSandboxStatus): string[] {
  const out: string[] = [];
  const reason = !os.available ? os.reason : "landlock" in os ? os.why : "";
  if (/not installed/.test(reason)) {
    out.push(
      "install bubblewrap: the strongest wall (Debian/Ubuntu: `sudo apt-get install bubblewrap`; " +
        "Fedora: `sudo dnf install bubblewrap`; Arch: `sudo pacman -S bubblewrap`)",
    );
  }
  if (/namespace|ENOSPC|uid map|Operation not permitted/i.test(reason)) {
    if (inContainer()) {
      out.push(
        "in a container: its seccomp profile refuses the namespaces bubblewrap needs; run it with " +
          "a profile that allows clone/unshare of user namespaces (or `--security-opt " +
          "seccomp=unconfined` where that is acceptable), or keep the Landlock wall",
      );
    }
    out.push(
      "unprivileged user namespaces are off or restricted: allow them for bubblewrap " +
        "(`sysctl user.max_user_namespaces=15000`; Debian kernels: " +
        "`sysctl kernel.unprivileged_userns_clone=1`; Ubuntu 24.04+: an AppArmor profile for " +
        "/usr/bin/bwrap with `userns,`, or `sysctl kernel.apparmor_restrict_unprivileged_userns=0`)",
    );
  }
  if (os.available && "landlock" in os) {
    if (os.landlock < 4) {
      out.push("a kernel with Landlock ABI 4+ (Linux 6.7) keeps TCP to the proxy's ports only");
    }
    if (os.landlock < 6) {
      out.push(
        "a kernel with Landlock ABI 6+ (Linux 6.12) scopes signals and abstract unix sockets, " +
          "and lets the sandbox's init end every process of it when pml goes",
      );
    }
  }
  if (reason.startsWith("PML_SANDBOX_WALL=")) {
    out.push("unset PML_SANDBOX_WALL (it forces a wall, for tests): PML then takes the best one");
  } else if (!os.available && !/not installed/.test(reason) && Deno.build.os === "linux") {
    out.push("a kernel with Landlock (Linux 5.13+, `lsm=…,landlock` on its command line)");
  }
  if (os.available && Deno.build.os === "linux") {
    const group = createGroup({ tasks: 8 });
    if (group) void group.remove();
    else {
      out.push(
        "a delegated control group caps each sandbox's memory and tasks: run pml under " +
          "`systemd-run --user --scope -p Delegate=yes …`, or as a service with `Delegate=yes`",
      );
    }
  }
  return out;
}

/** Whether this process runs in a container (Docker, Podman, a devcontainer). */
function inContainer(): boolean {
  for (const marker of ["/.dockerenv", "/run/.containerenv"]) {
    try {
      Deno.statSync(marker);
      return true;
    } catch { /* next */ }
  }
  return false;
}

function doctorText(r: DoctorReport): string {
  const name = r.wall === "landlock" ? `Landlock ABI ${r.landlockAbi} + seccomp` : r.wall;
  const lines = [`wall        ${r.wall === "none" ? "NONE" : name}: ${r.why}`];
  if (r.canary) {
    const o = r.canary.outcomes;
    const state = (p: CanaryProbe) => (o[p]?.done ? "done" : "refused");
    lines.push(
      `canary      ${r.canary.ok ? "passed" : `FAILED (${r.canary.failed.join("; ")})`}: ` +
        CANARY_PROBES.map((p) => `${p} ${state(p)}`).join(", "),
    );
    for (const note of r.canary.notes) lines.push(`            note: ${note}`);
  }
  for (const h of r.holds) lines.push(`holds       ${h}`);
  for (const h of r.doesNotHold) lines.push(`not held    ${h}`);
  for (const a of r.advice) lines.push(`stronger    ${a}`);
  return lines.join("\n") + "\n";
}
