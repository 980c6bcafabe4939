import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import {
  CANARY_EXPECTED,
  CANARY_PROBES,
  CANARY_WORDS,
  canaryDecision,
  type CanaryKey,
  type CanaryOutcomes,
  type CanaryRecord,
  canaryRecordPath,
  probeRunner,
  profileFingerprint,
  readCanaryRecord,
  seatbeltCanary,
} from "./seatbelt_canary.ts";
import { bwrapArgs } from "./os_sandbox.ts";
import { detectOsSandbox } from "./detect_os_sandbox.ts";

const KEY: CanaryKey = { os: "macOS 14.5 23F79", profile: "abc", deno: "2.9.6" };

/** Outcomes as a Mac where the wall holds records them. */
const HELD: CanaryOutcomes = Object.fromEntries(
  CANARY_PROBES.map((p) => [
    p,
    CANARY_EXPECTED[p] === "done" ? { done: true } : { done: false, detail: "PermissionDenied" },
  ]),
);

const record = (outcomes: CanaryOutcomes, key = KEY): CanaryRecord => ({
  key,
  at: "2026-11-28T04:00:00.000Z",
  outcomes,
});

/** A runner that must not be called (the recorded result stands). */
const notRun = () => {
  throw new Error("the canary ran again");
};

Deno.test("canary decision: every probe as expected → use", () => {
  assertEquals(canaryDecision(record(HELD), KEY), { kind: "use" });
});

Deno.test("canary decision: each single failure → refuse naming it, and only it", () => {
  for (const probe of CANARY_PROBES) {
    const flipped = { ...HELD, [probe]: { done: !HELD[probe]!.done, detail: "seen" } };
    const decision = canaryDecision(record(flipped), KEY);
    assert(decision.kind === "refuse", probe);
    assertEquals(decision.failed, [probe]);
    assertStringIncludes(decision.reason, CANARY_WORDS[probe]);
    const verb = CANARY_EXPECTED[probe] === "refused" ? "it could " : "it could not ";
    assertStringIncludes(decision.reason, verb + CANARY_WORDS[probe] + " (seen)");
  }
});

Deno.test("canary decision: a probe that did not run counts as failed", () => {
  const { "reach-host": _, ...rest } = HELD;
  const decision = canaryDecision(record(rest), KEY);
  assert(decision.kind === "refuse");
  assertEquals(decision.failed, ["reach-host"]);
  assertStringIncludes(decision.reason, "(did not run)");
});

Deno.test("canary decision: no record, another OS build, renderer or Deno → run again", () => {
  assertEquals(canaryDecision(undefined, KEY), { kind: "run", why: "first use on this machine" });
  const older = { ...KEY, os: "macOS 14.5 23F70" };
  assertEquals(canaryDecision(record(HELD, older), KEY), {
    kind: "run",
    why: "the OS changed (macOS 14.5 23F70 → macOS 14.5 23F79)",
  });
  // A refusal recorded for another OS is not kept either.
  const refused = { ...HELD, "read-secret": { done: true } };
  assertEquals(canaryDecision(record(refused, older), KEY).kind, "run");
  assertEquals(canaryDecision(record(HELD, { ...KEY, profile: "old" }), KEY).kind, "run");
  assertEquals(canaryDecision(record(HELD, { ...KEY, deno: "2.9.5" }), KEY).kind, "run");
});

Deno.test("canary: first use runs it and records the result in PML's home; the next use reads it", () => {
  const pmlHome = join(Deno.makeTempDirSync(), ".pml");
  try {
    let runs = 0;
    const first = seatbeltCanary({ pmlHome, key: KEY, run: () => (runs++, HELD) });
    assertEquals([first.use, first.ran, runs], [true, true, 1]);
    assertEquals(readCanaryRecord(pmlHome)?.outcomes, HELD);
    assertEquals(readCanaryRecord(pmlHome)?.key, KEY);
    const second = seatbeltCanary({ pmlHome, key: KEY, run: notRun });
    assertEquals([second.use, second.ran], [true, false]);
    // After an OS update it runs again, and the new outcome decides.
    const updated = { ...KEY, os: "macOS 15.0 24A335" };
    const leaky = { ...HELD, "write-outside": { done: true } };
    const third = seatbeltCanary({ pmlHome, key: updated, run: () => (runs++, leaky) });
    assert(!third.use);
    assertEquals([third.ran, runs], [true, 2]);
    assertStringIncludes(third.reason, "it could write a file outside the workspace");
    assertEquals(readCanaryRecord(pmlHome)?.key.os, "macOS 15.0 24A335");
  } finally {
    Deno.removeSync(join(pmlHome, ".."), { recursive: true });
  }
});

Deno.test("canary: a recorded refusal stands without running again, and says what to do", () => {
  const pmlHome = Deno.makeTempDirSync();
  try {
    const refused = { ...HELD, "write-protected": { done: true } };
    Deno.writeTextFileSync(canaryRecordPath(pmlHome), JSON.stringify(record(refused)));
    const verdict = seatbeltCanary({ pmlHome, key: KEY, run: notRun });
    assert(!verdict.use);
    assertStringIncludes(verdict.reason, "it could write a protected file (.git/config)");
    assertStringIncludes(verdict.reason, "sandbox.unconfined");
    assertStringIncludes(verdict.reason, canaryRecordPath(pmlHome));
    // An unreadable record is no record: it runs.
    Deno.writeTextFileSync(canaryRecordPath(pmlHome), "{not json");
    assert(seatbeltCanary({ pmlHome, key: KEY, run: () => HELD }).ran);
  } finally {
    Deno.removeSync(pmlHome, { recursive: true });
  }
});

Deno.test("canary probes: with no wall around them, the four refusals are seen to fail", () => {
  const outcomes = probeRunner((_, command) => [...command])();
  const decision = canaryDecision(record(outcomes), KEY);
  assert(decision.kind === "refuse", JSON.stringify(outcomes));
  assertEquals(decision.failed, ["read-secret", "write-outside", "reach-host", "write-protected"]);
});

Deno.test("canary probes: a canary that does not start fails every probe, saying why", () => {
  const outcomes = probeRunner(() => ["/bin/sh", "-c", "echo no sandbox here >&2; exit 71"])();
  const decision = canaryDecision(record(outcomes), KEY);
  assert(decision.kind === "refuse");
  assertEquals(decision.failed, CANARY_PROBES.filter((p) => CANARY_EXPECTED[p] === "done"));
  assertStringIncludes(decision.reason, "the canary did not answer: exit 71, no sandbox here");
});

const os = detectOsSandbox(undefined, "bubblewrap");
Deno.test({
  name:
    "canary probes: under bubblewrap (the Linux wall of the same policy) every file and network probe holds",
  ignore: !os.available,
  fn() {
    const bwrap = (os as { bwrap: string }).bwrap;
    // Bubblewrap reaches its proxy through a bridge into its network namespace (`net_bridge.ts`),
    // not through a loopback port of the host: that probe is Seatbelt's alone.
    const outcomes = probeRunner((scene, command) => [
      bwrap,
      ...bwrapArgs({ ...scene.policy, net: [] }, scene.workspace, command),
    ])();
    const decision = canaryDecision(record(outcomes), KEY);
    assert(decision.kind === "refuse", JSON.stringify(outcomes));
    assertEquals(decision.failed, ["reach-proxy"]);
  },
});

Deno.test("canary key: the renderer's fingerprint is stable", () => {
  assertEquals(profileFingerprint(), profileFingerprint());
  assert(/^[0-9a-f]{16}$/.test(profileFingerprint()));
});
