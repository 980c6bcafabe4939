import { type Config, loadConfig, trustNotice } from "../config/config.ts";
import { unpinnedWarning } from "../deps/metadata.ts";
import { checkPermission } from "../permission/patterns.ts";
import { lockStatus } from "../registry/lock_status.ts";
import type { CliIo } from "./io.ts";
import { printableLine as q } from "../sandbox/printable.ts";
import { type OsPolicy, unixSocketsAllowed } from "../sandbox/os_sandbox.ts";
import { detectOsSandbox, wallChoice } from "../sandbox/detect_os_sandbox.ts";
import { SandboxPool } from "../sandbox/pool.ts";
import { createRoutingResolver } from "../routing/routing.ts";
import { StdTarget } from "../targets/std/std_target.ts";
import { waitingSync } from "../oauth/sign_in_store.ts";

/** `pml status`: where PML thinks it is and what it will do, without starting anything. */
export function runStatus(io: CliIo, opts: { json: boolean }): number {
  const config = loadConfig({ env: io.env, cwd: io.cwd, home: io.home });
  const status = {
    workspace: config.workspace,
    workspaceSource: config.workspaceSource,
    config: config.hasConfigFile ? config.configPath : "(none: built-in defaults)",
    trust: { state: config.trust.state, widens: config.trust.widens, notice: trustNotice(config) },
    cloudUrl: config.cloudUrl,
    cloudMode: config.apiKey ? "cloud (API key set)" : "local-only (no PML_API_KEY)",
    permissions: config.permissions,
    examples: Object.fromEntries(
      ["filesystem:read_file", "filesystem:write_file", "shell:exec"].map((t) => [
        t,
        checkPermission(t, config.permissions),
      ]),
    ),
    lockfile: lockStatus(config.workspace, config.pmlHome, config.permissions),
    osSandbox: osSandboxLine(config.sandbox.unconfined, config.env),
    /** The OS policy `shell:exec` runs under (docs/security.md "The sandbox model"). */
    shellPolicy: shellPolicy(config),
    warnings: unpinnedPackages(config.privateMcps),
    /** Remote servers that wait for their user to sign in (`pml auth NAME`). */
    signIn: waitingSync(
      config.pmlHome,
      Object.fromEntries(
        Object.entries(config.privateMcps).flatMap(([n, m]) =>
          m.type === "http" && m.proxyTo ? [[n, m.proxyTo]] : []
        ),
      ),
    ),
  };
  if (opts.json) {
    io.stdout(JSON.stringify(status, null, 2) + "\n");
    return 0;
  }
  const lines = [
    `workspace   ${status.workspace} (${status.workspaceSource})`,
    `config      ${status.config}`,
    `trust       ${trustLine(config)}`,
    `cloud       ${status.cloudUrl}: ${status.cloudMode}`,
    `allow       ${q(config.permissions.allow.join(", ")) || "-"}`,
    `ask         ${q(config.permissions.ask.join(", ")) || "-"}`,
    `deny        ${q(config.permissions.deny.join(", ")) || "-"}`,
    `sandbox     ${status.osSandbox}`,
    `shell       ${policyLine(status.shellPolicy)}`,
    `lockfile    ${status.lockfile.path}${
      status.lockfile.error ? `: ${status.lockfile.error}` : ""
    }`,
    // Names and pins come from .pml.json and the lockfile: one line each, controls escaped.
    ...status.lockfile.rows.map((r) =>
      `  ${q(r.fqdn)}  ${q(r.type)}  ${q(r.integrity)}  ${q(r.state)}${
        r.pins ? `  (${q(r.pins)})` : ""
      }`
    ),
    ...status.signIn.map((w) =>
      `sign-in     ${q(w.server)} waits for its user to sign in since ${
        new Date(w.since).toISOString()
      }: run \`pml auth ${q(w.server)}\``
    ),
    ...status.warnings.map((w) => `!!! ${q(w)}`),
  ];
  io.stdout(lines.join("\n") + "\n");
  return 0;
}

/** The policy of the `shell:exec` sandbox, as the std target would start it (nothing starts). */
function shellPolicy(config: Config): OsPolicy {
  const std = new StdTarget({
    config,
    pool: new SandboxPool(),
    audit: { write: () => Promise.resolve() },
    routing: createRoutingResolver(),
  });
  return std.specFor("run").os!;
}

/** One line of what a policy lets through. */
function policyLine(policy: OsPolicy): string {
  return `reads ${policy.read.length} folders (the toolbox), ${policy.denyRead.length} secrets ` +
    `hidden; writes ${policy.write.join(", ")}, ${policy.denyWrite.length} protected files ` +
    `read-only; network ${policy.net.length ? policy.net.join(", ") : "none"}; unix sockets ` +
    `${unixSocketsAllowed(policy) ? "allowed" : "refused"}; uid ${policy.identity.uid} inside`;
}

/** Loud warnings for `private_mcps` npm packages without `integrity` (story 14.4 task 5). */
function unpinnedPackages(mcps: Config["privateMcps"]): string[] {
  return Object.entries(mcps).flatMap(([server, m]) =>
    m.type === "stdio" && m.package && m.package.integrity === undefined
      ? [unpinnedWarning(server, m.package)]
      : []
  );
}

function osSandboxLine(unconfined: boolean, env: Readonly<Record<string, string>>): string {
  const os = detectOsSandbox(env.PATH, wallChoice(env.PML_SANDBOX_WALL));
  if (os.available && "seatbelt" in os) {
    return `Seatbelt (${os.seatbelt}, its self-test passed on this Mac at ${os.canary}): ` +
      "local tools run confined to the workspace";
  }
  if (os.available && "bwrap" in os) {
    return `bubblewrap (${os.bwrap}): local tools run confined to the workspace`;
  }
  if (os.available) {
    return `Landlock ABI ${os.landlock} + seccomp (bubblewrap not used: ${os.why}): local tools ` +
      `run confined to the workspace; \`pml doctor\` says what holds less than under bubblewrap`;
  }
  const rest =
    "; the read/write tools, pml:execute and registry modules run with Deno's flags only";
  return unconfined
    ? `NONE (${os.reason}); shell:exec and stdio dependencies run UNCONFINED because .pml.json sets sandbox.unconfined${rest}`
    : `NONE (${os.reason}); shell:exec and stdio dependencies are refused until it is installed${rest}`;
}

function trustLine(config: Config): string {
  switch (config.trust.state) {
    case "none":
      return "no .pml.json: built-in defaults";
    case "narrow":
      return "applies as it is (it widens nothing beyond the built-in defaults)";
    case "trusted":
      return `trusted by a human (${config.trust.widens.length} widening entries)${
        config.trust.edited ? "; edited by hand since, narrowing only" : ""
      }`;
    case "untrusted":
      return `NOT TRUSTED: ${q(trustNotice(config) ?? "")}`;
  }
}
