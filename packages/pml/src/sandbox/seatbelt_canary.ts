/**
 * The self-test behind the Seatbelt wall (issue 39): before `pml` confines anything with
 * `sandbox-exec` on a Mac, a canary runs under a profile of the same renderer on this machine and
 * must fail to read a secret, to write outside its workspace, to reach a host that is not granted
 * and to write a protected file, and must read and write its workspace, run a shell there, reach
 * its network proxy's port and read PML's own code. Only
 * then is the wall used; otherwise PML refuses what needs it (as where no wall works), naming what
 * failed. The result is kept in PML's home (`seatbelt-canary.json`, never in a workspace; that
 * folder is a secret of every sandbox), keyed by the macOS version and build, the renderer's
 * fingerprint and Deno's version: an OS update, a change of the profile or a new Deno runs it again.
 *
 * The decision is a pure function of the recorded outcomes ({@link canaryDecision}); the probes are
 * run by a {@link CanaryRunner} handed in: {@link probeRunner} starts them under whatever wraps
 * the canary's command (`sandbox-exec` on macOS), and tests here give recorded outcomes or
 * another wall.
 *
 * @module
 */
import { join } from "node:path";
import { sha256Hex } from "../sha256.ts";
import { guardedPaths } from "../config/control_files.ts";
import { sandboxEntry } from "../paths.ts";
import { type OsPolicy, sandboxPolicy } from "./policy.ts";
import { sandboxExecArgs, seatbeltProfile } from "./seatbelt.ts";

/** What the canary tries, in the order it tries them. */
export const CANARY_PROBES = [
  "read-secret",
  "write-outside",
  "reach-host",
  "write-protected",
  "read-workspace",
  "write-workspace",
  "run-shell",
  "reach-proxy",
  "read-pml-code",
] as const;
export type CanaryProbe = typeof CANARY_PROBES[number];

/** What each probe must come to for the wall to be used: refused, or done. */
export const CANARY_EXPECTED: Readonly<Record<CanaryProbe, "refused" | "done">> = {
  "read-secret": "refused",
  "write-outside": "refused",
  "reach-host": "refused",
  "write-protected": "refused",
  "read-workspace": "done",
  "write-workspace": "done",
  "run-shell": "done",
  "reach-proxy": "done",
  "read-pml-code": "done",
};

/** Each probe in words, for the refusal and `pml doctor`. */
export const CANARY_WORDS: Readonly<Record<CanaryProbe, string>> = {
  "read-secret": "read a secret (a file under a hidden folder of HOME)",
  "write-outside": "write a file outside the workspace",
  "reach-host": "connect to a loopback port that is not granted",
  "write-protected": "write a protected file (.git/config)",
  "read-workspace": "read a file of the workspace",
  "write-workspace": "write a file in the workspace",
  "run-shell": "run /bin/sh in the workspace",
  "reach-proxy": "connect to its network proxy's loopback port",
  "read-pml-code": "read PML's own code (a sandbox's entry module)",
};

/** How one probe went: whether the operation was done, and what was seen (an error's name). */
export interface CanaryOutcome {
  readonly done: boolean;
  readonly detail?: string;
}

/** The outcomes of one canary run; a probe that did not run is missing. */
export type CanaryOutcomes = Readonly<Partial<Record<CanaryProbe, CanaryOutcome>>>;

/** What a recorded result holds for: this machine's OS, PML's profile renderer and Deno. */
export interface CanaryKey {
  /** `sw_vers`: product version and build (`macOS 14.5 23F79`). */
  readonly os: string;
  /** The fingerprint of the renderer's output ({@link profileFingerprint}). */
  readonly profile: string;
  readonly deno: string;
}

/** What `seatbelt-canary.json` holds. */
export interface CanaryRecord {
  readonly key: CanaryKey;
  /** When it ran (ISO 8601). */
  readonly at: string;
  readonly outcomes: CanaryOutcomes;
}

/** What to do with the wall, from a record and the machine's current key. */
export type CanaryDecision =
  | { readonly kind: "use" }
  | { readonly kind: "refuse"; readonly failed: readonly CanaryProbe[]; readonly reason: string }
  | { readonly kind: "run"; readonly why: string };

/**
 * Use, refuse or run the canary (again): `run` without a record or when the record was made
 * for another OS, renderer or Deno; else `use` when every probe came out as expected, `refuse`
 * naming each one that did not (a probe that did not run counts as failed).
 *
 * @example
 * ```ts
 * canaryDecision(undefined, key); // { kind: "run", why: "first use on this machine" }
 * ```
 */
export function canaryDecision(record: CanaryRecord | undefined, key: CanaryKey): CanaryDecision {
  if (!record) return { kind: "run", why: "first use on this machine" };
  if (record.key.os !== key.os) {
    return { kind: "run", why: `the OS changed (${record.key.os} → ${key.os})` };
  }
  if (record.key.profile !== key.profile) return { kind: "run", why: "PML's profile changed" };
  if (record.key.deno !== key.deno) {
    return { kind: "run", why: `Deno changed (${record.key.deno} → ${key.deno})` };
  }
  const failed = CANARY_PROBES.filter((probe) => {
    const outcome = record.outcomes[probe];
    return outcome === undefined || outcome.done !== (CANARY_EXPECTED[probe] === "done");
  });
  if (failed.length === 0) return { kind: "use" };
  const said = failed.map((probe) => {
    const outcome = record.outcomes[probe];
    const verb = CANARY_EXPECTED[probe] === "refused" ? "could" : "could not";
    const detail = outcome?.detail ? ` (${outcome.detail})` : outcome ? "" : " (did not run)";
    return `it ${verb} ${CANARY_WORDS[probe]}${detail}`;
  });
  return {
    kind: "refuse",
    failed,
    reason: `the Seatbelt self-test failed on this machine (${record.at}): ${said.join("; ")}`,
  };
}

/** Runs the canary's probes and says how each went (`probeRunner`, or recorded in tests). */
export type CanaryRunner = () => CanaryOutcomes;

/** The record's file in PML's home. */
export function canaryRecordPath(pmlHome: string): string {
  return join(pmlHome, "seatbelt-canary.json");
}

/** The recorded result, `undefined` when there is none or it cannot be read. */
export function readCanaryRecord(pmlHome: string): CanaryRecord | undefined {
  try {
    const record = JSON.parse(Deno.readTextFileSync(canaryRecordPath(pmlHome))) as CanaryRecord;
    return typeof record?.key?.os === "string" && typeof record.outcomes === "object"
      ? record
      : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the wall may be used here, and if not, why (with what to do). */
export type CanaryVerdict =
  | { readonly use: true; readonly record: CanaryRecord; readonly ran: boolean }
  | { readonly use: false; readonly reason: string; readonly ran: boolean };

/**
 * The self-test's verdict on this machine: the recorded one when it still holds for `key`, else
 * a new canary run (`run`), recorded in `pmlHome` before it is decided on.
 *
 * @example
 * ```ts
 * seatbeltCanary({ pmlHome, key: currentCanaryKey(), run: probeRunner(sandboxExecWrap) });
 * ```
 */
export function seatbeltCanary(opts: {
  pmlHome: string;
  key: CanaryKey;
  run: CanaryRunner;
  now?: () => Date;
}): CanaryVerdict {
  let record = readCanaryRecord(opts.pmlHome);
  let decision = canaryDecision(record, opts.key);
  let ran = false;
  if (decision.kind === "run") {
    record = {
      key: opts.key,
      at: (opts.now?.() ?? new Date()).toISOString(),
      outcomes: opts.run(),
    };
    ran = true;
    writeRecord(opts.pmlHome, record);
    decision = canaryDecision(record, opts.key);
  }
  if (decision.kind === "use") return { use: true, record: record!, ran };
  const reason = decision.kind === "refuse" ? decision.reason : decision.why;
  return {
    use: false,
    ran,
    reason: `${reason}. PML does not use a wall it has not seen hold: run with ` +
      `\`sandbox.unconfined\` at your own risk, or delete "${canaryRecordPath(opts.pmlHome)}" ` +
      `to run the self-test again (after an OS update it runs by itself)`,
  };
}

function writeRecord(pmlHome: string, record: CanaryRecord): void {
  try {
    Deno.mkdirSync(pmlHome, { recursive: true, mode: 0o700 });
    Deno.writeTextFileSync(canaryRecordPath(pmlHome), JSON.stringify(record, null, 2) + "\n");
  } catch { /* kept for this process only: the next one runs it again */ }
}

/** A fixed policy whose profile stands for the renderer: any change to it runs the canary again. */
const FINGERPRINT_POLICY: OsPolicy = {
  read: ["/r"],
  write: ["/w"],
  denyRead: ["/r/s"],
  denyWrite: ["/w/.git/config"],
  net: ["h:1"],
  identity: { uid: 501, gid: 20 },
  sockets: ["/r/agent.sock"],
  limits: { tasks: 1, tmpMb: 1, shmMb: 1, fileMb: 1, memoryMb: 1 },
};

/** The fingerprint of what {@link seatbeltProfile} writes (the first 16 hex of its SHA-256). */
export function profileFingerprint(): string {
  const profile = seatbeltProfile(FINGERPRINT_POLICY, { tmp: "/t", deno: "/d" });
  return sha256Hex(profile).slice(0, 16);
}

/** This Mac's key: `sw_vers` (product version and build), the renderer, Deno. */
export function currentCanaryKey(): CanaryKey {
  return { os: macosVersion(), profile: profileFingerprint(), deno: Deno.version.deno };
}

/** `macOS <version> <build>` from `sw_vers`, or the kernel's release where it cannot run. */
function macosVersion(): string {
  try {
    const out = new Deno.Command("/usr/bin/sw_vers", { stdout: "piped", stderr: "null" })
      .outputSync();
    const text = new TextDecoder().decode(out.stdout);
    const field = (name: string) => text.match(new RegExp(`${name}:\\s*(\\S+)`))?.[1];
    const version = field("ProductVersion");
    if (out.success && version) return `macOS ${version} ${field("BuildVersion") ?? ""}`.trim();
  } catch { /* below */ }
  return `${Deno.build.os} ${Deno.osRelease()}`;
}

/** The canary's machine: its folders, the policy over them and the port it must not reach. */
export interface CanaryScene {
  readonly root: string;
  readonly home: string;
  readonly workspace: string;
  readonly outside: string;
  /** The sandbox's private temporary folder (its `TMPDIR`, `HOME` and `DENO_DIR` go there). */
  readonly tmp: string;
  /** Grants one host, so that the network goes through the proxy only. */
  readonly policy: OsPolicy;
  /** A loopback port that listens and is not granted. */
  readonly hostPort: number;
  /** The loopback port that stands for the proxy (HTTP and SOCKS5). */
  readonly proxyPort: number;
}

/**
 * How the canary's command is confined: the program and arguments that run `command` in the
 * scene's workspace under the wall (`sandbox-exec -p <profile>` on macOS).
 */
export type CanaryWrap = (scene: CanaryScene, command: readonly string[]) => string[];

/** The wrap of the Seatbelt wall: the scene's profile through `sandbox-exec`. */
export const sandboxExecWrap: CanaryWrap = (scene, command) =>
  sandboxExecArgs(
    seatbeltProfile(scene.policy, { tmp: scene.tmp, deno: Deno.execPath() }),
    command,
    [scene.proxyPort, scene.proxyPort],
  );

/** The secret the canary must not read, and where it lies under the scene's home. */
const SECRET = "pml-canary-secret";
const SECRET_REL = ".ssh/id_pml_canary";

/**
 * The probes, as Deno code run in the canary (`deno eval`): each operation tried once, printed as
 * one JSON line of outcomes. Paths come as arguments.
 */
const PROBE_CODE = `
const [home, ws, outside, port, proxyPort, pmlCode] = Deno.args;
const out = {};
const attempt = async (name, op) => {
  try { const seen = await op(); out[name] = { done: seen !== false }; }
  catch (err) { out[name] = { done: false, detail: err?.name ?? String(err) }; }
};
await attempt("read-secret", () => Deno.readTextFileSync(home + "/${SECRET_REL}") === "${SECRET}");
await attempt("write-outside", () => Deno.writeTextFileSync(outside + "/written", "x"));
await attempt("reach-host", async () => {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
  conn.close();
});
await attempt("write-protected", () => Deno.writeTextFileSync(ws + "/.git/config", "x", { append: true }));
await attempt("read-workspace", () => Deno.readTextFileSync(ws + "/notes.txt") === "canary");
await attempt("write-workspace", () => Deno.writeTextFileSync(ws + "/written", "x"));
await attempt("run-shell", async () => {
  const r = await new Deno.Command("/bin/sh", { args: ["-c", "echo ok > shell.txt"], cwd: ws }).output();
  return r.success;
});
await attempt("reach-proxy", async () => {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(proxyPort) });
  conn.close();
});
await attempt("read-pml-code", () => Deno.readTextFileSync(pmlCode).length > 0);
console.log(JSON.stringify(out));
`;

/** Builds the canary's scene in a new temporary folder (removed by the runner). */
export function canaryScene(ports: { hostPort: number; proxyPort: number }): CanaryScene {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-canary-" }));
  const home = join(root, "home");
  const workspace = join(root, "ws");
  const outside = join(root, "outside");
  const tmp = join(root, "tmp");
  for (const dir of [join(home, ".ssh"), join(workspace, ".git"), outside, join(tmp, "deno")]) {
    Deno.mkdirSync(dir, { recursive: true });
  }
  Deno.writeTextFileSync(join(home, SECRET_REL), SECRET);
  Deno.writeTextFileSync(join(workspace, ".git", "config"), "[core]\n");
  Deno.writeTextFileSync(join(workspace, "notes.txt"), "canary");
  const policy = sandboxPolicy({
    view: "toolbox",
    env: { HOME: home, PATH: "/usr/bin:/bin" },
    write: [workspace],
    denyWrite: guardedPaths([workspace]),
    // A granted host the canary never asks for: the profile then has its proxy rules.
    net: ["127.0.0.1:9"],
  });
  return { root, home, workspace, outside, tmp, policy, ...ports };
}

/**
 * The runner that builds a scene, runs the probes once under `wrap` and checks from outside what
 * they may have changed (a write seen on disk counts as done whatever the canary said). A canary
 * that does not start or answer leaves every probe failed, with its exit and first error line.
 */
export function probeRunner(wrap: CanaryWrap, deno = Deno.execPath()): CanaryRunner {
  return () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const proxy = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const scene = canaryScene({ hostPort: listener.addr.port, proxyPort: proxy.addr.port });
    try {
      const command = [
        deno,
        "eval",
        "--quiet",
        "--no-config",
        PROBE_CODE,
        scene.home,
        scene.workspace,
        scene.outside,
        String(scene.hostPort),
        String(scene.proxyPort),
        sandboxEntry("std_entry"),
      ];
      const [program, ...args] = wrap(scene, command);
      const out = new Deno.Command(program, {
        args,
        cwd: scene.workspace,
        clearEnv: true,
        env: {
          PATH: "/usr/bin:/bin",
          HOME: scene.home,
          TMPDIR: scene.tmp,
          DENO_DIR: join(scene.tmp, "deno"),
          DENO_NO_UPDATE_CHECK: "1",
        },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).outputSync();
      return checked(scene, parsed(out));
    } finally {
      listener.close();
      proxy.close();
      try {
        Deno.removeSync(scene.root, { recursive: true });
      } catch { /* left in the temporary folder */ }
    }
  };
}

/** The canary's printed outcomes, or every probe failed with why it did not answer. */
function parsed(out: Deno.CommandOutput): CanaryOutcomes {
  const text = new TextDecoder().decode(out.stdout).trim().split("\n").at(-1) ?? "";
  try {
    const outcomes = JSON.parse(text) as CanaryOutcomes;
    if (outcomes && typeof outcomes === "object") return outcomes;
  } catch { /* below */ }
  const err = new TextDecoder().decode(out.stderr).trim().split("\n")[0];
  const detail = `the canary did not answer: exit ${out.code}${err ? `, ${err}` : ""}`;
  return Object.fromEntries(CANARY_PROBES.map((p) => [p, { done: false, detail }]));
}

/** `outcomes` with what the disk shows: a write that happened counts as done. */
function checked(scene: CanaryScene, outcomes: CanaryOutcomes): CanaryOutcomes {
  const seen = (path: string, test: (text: string) => boolean) => {
    try {
      return test(Deno.readTextFileSync(path));
    } catch {
      return false;
    }
  };
  const wrote = {
    "write-outside": seen(join(scene.outside, "written"), () => true),
    "write-protected": seen(join(scene.workspace, ".git", "config"), (t) => t !== "[core]\n"),
    "write-workspace": seen(join(scene.workspace, "written"), () => true),
    "run-shell": seen(join(scene.workspace, "shell.txt"), (t) => t.trim() === "ok"),
  };
  const out: Partial<Record<CanaryProbe, CanaryOutcome>> = { ...outcomes };
  for (const [probe, done] of Object.entries(wrote) as [CanaryProbe, boolean][]) {
    const said = outcomes[probe];
    if (said === undefined) continue;
    // Refusals are believed only when the disk agrees; what is done must show there too.
    if (done !== said.done) {
      out[probe] = { done, detail: `${said.detail ?? ""} (seen on disk)`.trim() };
    }
  }
  return out;
}
