/**
 * Which OS wall this machine offers ({@link OsSandboxStatus}), found once per process: bubblewrap
 * where it can build its namespaces (a probe run), else Landlock where the kernel has it, on macOS
 * Seatbelt once its self-test passed (`seatbelt_canary.ts`); else none, with the reason (for the
 * refusal message, `pml status` and `pml doctor`). `PML_SANDBOX_WALL` forces one ({@link WallChoice}).
 * How a policy is rendered for the wall found is `os_sandbox.ts`.
 *
 * @module
 */
import { join } from "node:path";
import { exists } from "../exists.ts";
import { pmlHomeOf } from "../config/config.ts";
import { landlockAbi } from "./landlock.ts";
import { libcPath } from "./libc.ts";
import { SANDBOX_EXEC } from "./seatbelt.ts";
import {
  type CanaryRunner,
  currentCanaryKey,
  probeRunner,
  sandboxExecWrap,
  seatbeltCanary,
} from "./seatbelt_canary.ts";

/**
 * The OS wall this machine offers, and if none, why (for the refusal message, `pml status` and
 * `pml doctor`): bubblewrap where it can build its namespaces, else Landlock (with the reason
 * bubblewrap could not be used), else none; on macOS Seatbelt once its self-test passed
 * (`canary`: when it ran).
 */
export type OsSandboxStatus =
  | { readonly available: true; readonly bwrap: string }
  | { readonly available: true; readonly seatbelt: string; readonly canary: string }
  | {
    readonly available: true;
    /** The Landlock ABI of this kernel. */
    readonly landlock: number;
    /** Why not bubblewrap. */
    readonly why: string;
  }
  | { readonly available: false; readonly reason: string };

/** A status with a wall. */
export type OsWall = Extract<OsSandboxStatus, { available: true }>;

/** Which wall a status names: `bubblewrap`, `landlock`, `seatbelt` or `none`. */
export function wallName(os: OsSandboxStatus): "bubblewrap" | "landlock" | "seatbelt" | "none" {
  if (!os.available) return "none";
  return "bwrap" in os ? "bubblewrap" : "seatbelt" in os ? "seatbelt" : "landlock";
}

/**
 * Which wall to use, forced (`PML_SANDBOX_WALL`: for the attack suites run under each wall and for
 * `pml doctor`, never needed otherwise): `bubblewrap`, `landlock` or `none`; unset: the best one.
 */
export type WallChoice = "bubblewrap" | "landlock" | "none" | undefined;

const detected = new Map<string, OsSandboxStatus>();

/**
 * Finds `bwrap` on `PATH` and checks that it can create the namespaces (a container may refuse
 * user namespaces); where it cannot, Landlock when the kernel has it. Cached for the process, per
 * `PATH` and choice.
 */
export function detectOsSandbox(path = defaultPath(), choice = defaultChoice()): OsSandboxStatus {
  const key = `${choice ?? ""}\0${path}`;
  let status = detected.get(key);
  if (!status && Deno.build.os === "darwin") {
    status = choice === "none" ? forced(choice) : detectSeatbelt();
    detected.set(key, status);
  }
  if (!status) {
    const found = choice === "landlock" || choice === "none" ? forced(choice) : findBwrap(path);
    status = typeof found === "string"
      ? probed(found, outcome(() => new Deno.Command(found, PROBE).outputSync()), choice)
      : orLandlock(found, choice);
    detected.set(key, status);
  }
  return status;
}

/**
 * {@link detectOsSandbox} without blocking: the probe (a process start, ~15 ms) runs while the
 * caller goes on. Fills the same cache; the std target's prewarm awaits it before its sandbox.
 */
export async function detectOsSandboxSoon(
  path = defaultPath(),
  choice = defaultChoice(),
): Promise<OsSandboxStatus> {
  const key = `${choice ?? ""}\0${path}`;
  const cached = detected.get(key);
  if (cached) return cached;
  // The self-test runs at most once per macOS build (its result is recorded): not worth a detour.
  if (Deno.build.os === "darwin") return detectOsSandbox(path, choice);
  const found = choice === "landlock" || choice === "none" ? forced(choice) : findBwrap(path);
  // `output()` throws a failed start synchronously: `then` turns it into a rejection.
  const probe = (bwrap: string) =>
    Promise.resolve().then(() => new Deno.Command(bwrap, PROBE).output()).catch((err: Error) =>
      err
    );
  const status = typeof found === "string"
    ? probed(found, await probe(found), choice)
    : orLandlock(found, choice);
  // A synchronous detection may have finished meanwhile: the first answer stays.
  if (!detected.has(key)) detected.set(key, status);
  return detected.get(key)!;
}

function defaultChoice(): WallChoice {
  return wallChoice(Deno.env.get("PML_SANDBOX_WALL"));
}

/** The {@link WallChoice} a value of `PML_SANDBOX_WALL` names (anything else: none forced). */
export function wallChoice(value: string | undefined): WallChoice {
  return value === "bubblewrap" || value === "landlock" || value === "none" ? value : undefined;
}

/** The status a forced choice without bubblewrap starts from. */
function forced(choice: "landlock" | "none"): OsSandboxStatus {
  return { available: false, reason: `PML_SANDBOX_WALL=${choice}` };
}

/**
 * `without` (bubblewrap unusable) or, where the kernel has Landlock and the choice allows it, the
 * Landlock wall with the reason bubblewrap was not used.
 */
function orLandlock(without: OsSandboxStatus, choice: WallChoice): OsSandboxStatus {
  if (without.available || choice === "bubblewrap" || choice === "none") return without;
  const reason = (without as { reason: string }).reason;
  if (Deno.build.os !== "linux") return without;
  const abi = landlockAbi(libcPath());
  if (abi === 0) {
    return {
      available: false,
      reason: `${reason}; and this kernel has no Landlock (Linux 5.13+ with "landlock" in its ` +
        `LSM list), or a seccomp profile refuses it`,
    };
  }
  return { available: true, landlock: abi, why: reason };
}

function defaultPath(): string {
  return Deno.env.get("PATH") ?? "/usr/bin:/bin";
}

/** The probe: can bwrap create every namespace a sandbox gets, and run a program in them? */
const PROBE: Deno.CommandOptions = {
  args: ["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--", "true"],
  stdout: "null",
  stderr: "piped",
};

/**
 * Seatbelt on this Mac: `sandbox-exec`, and the self-test's verdict (recorded in PML's home; run
 * first when there is none for this macOS build, profile and Deno). `run` is the canary's runner.
 */
export function detectSeatbelt(
  pmlHome = pmlHomeOf(Deno.env.toObject(), Deno.env.get("HOME") ?? "/"),
  run: CanaryRunner = probeRunner(sandboxExecWrap),
): OsSandboxStatus {
  if (!exists(SANDBOX_EXEC)) {
    return { available: false, reason: `Seatbelt's ${SANDBOX_EXEC} is missing on this Mac` };
  }
  const verdict = seatbeltCanary({ pmlHome, key: currentCanaryKey(), run });
  return verdict.use
    ? { available: true, seatbelt: SANDBOX_EXEC, canary: verdict.record.at }
    : { available: false, reason: verdict.reason };
}

/** The `bwrap` on `path`, or why there is none to use. */
function findBwrap(path: string): string | OsSandboxStatus {
  if (Deno.build.os !== "linux") {
    return {
      available: false,
      reason: `no OS sandbox for ${Deno.build.os} yet (PML uses bubblewrap or Landlock on ` +
        "Linux, Seatbelt on macOS)",
    };
  }
  const bwrap = path.split(":").map((d) => join(d, "bwrap")).find(exists);
  if (!bwrap) {
    return {
      available: false,
      reason: "bubblewrap is not installed (Debian/Ubuntu: `sudo apt-get install bubblewrap`)",
    };
  }
  return bwrap;
}

function outcome<T>(run: () => T): T | Error {
  try {
    return run();
  } catch (err) {
    return err as Error;
  }
}

/** The status `bwrap` earns by how its probe went (else Landlock's, where it can stand in). */
function probed(
  bwrap: string,
  out: Deno.CommandOutput | Error,
  choice: WallChoice,
): OsSandboxStatus {
  if (out instanceof Error) {
    return orLandlock({ available: false, reason: `bubblewrap failed: ${out.message}` }, choice);
  }
  if (!out.success) {
    const why = new TextDecoder().decode(out.stderr).trim().split("\n")[0];
    return orLandlock({
      available: false,
      reason: `bubblewrap cannot create namespaces here (${why || `exit ${out.code}`})`,
    }, choice);
  }
  return { available: true, bwrap };
}
