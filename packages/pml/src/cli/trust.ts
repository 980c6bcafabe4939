/**
 * `pml trust`, `pml trust --list`, `pml untrust` (DESIGN §13 "Workspace trust"): a human trusts
 * the exact content of the workspace's `.pml.json`, after seeing what it widens beyond the
 * built-in defaults. Asked on a terminal; `--yes` is for the human's own scripts. The decision is
 * kept in `~/.pml/trusted.json`, outside the workspace, where no sandbox writes.
 *
 * @module
 */
import { loadConfig } from "../config/config.ts";
import { contentHash, readTrusted, trustHash, untrustWorkspace } from "../config/trust_store.ts";
import { PmlError } from "../errors.ts";
import type { CliIo } from "./io.ts";
import { printableLine } from "../sandbox/printable.ts";

/** `pml trust [--yes]`: trusts the current content of `.pml.json`. Returns the exit code. */
export async function runTrust(io: CliIo, opts: { yes: boolean }): Promise<number> {
  const config = loadConfig({ env: io.env, cwd: io.cwd, home: io.home });
  const { trust } = config;
  if (trust.state === "none") {
    throw new PmlError("TRUST_NO_FILE", `No .pml.json in "${trust.folder}": nothing to trust`);
  }
  if (trust.state === "narrow") {
    io.stdout(
      `${config.configPath} widens nothing beyond the built-in defaults: it applies as it is.\n`,
    );
    return 0;
  }
  if (trust.state === "trusted") {
    io.stdout(`${config.configPath} is trusted as it is (sha256 ${trust.hash}).\n`);
    return 0;
  }
  io.stdout(
    (trust.edited
      ? `${config.configPath} (sha256 ${trust.hash}) changed since you trusted it; the change ` +
        `widens PML:\n`
      : `${config.configPath} (sha256 ${trust.hash}) widens PML beyond its built-in defaults:\n`) +
      // Each line quotes the file (untrusted until this answer): one line each, controls escaped.
      trust.widens.map((w) => `  - ${printableLine(w)}\n`).join("") +
      (trust.edited
        ? `Until you trust it, PML applies the file without these.\n`
        : `Until you trust it, PML applies only its deny and ask entries.\n`),
  );
  if (!opts.yes) {
    if (!io.isTerminal || !io.prompt) {
      throw new PmlError(
        "TRUST_NOT_CONFIRMED",
        "pml trust needs your confirmation: run it in a terminal, or with --yes",
      );
    }
    const answer = ((await io.prompt("Trust this exact content? [y/N]")) ?? "").trim();
    if (!/^y(es)?$/i.test(answer)) {
      io.stdout("Not trusted.\n");
      return 1;
    }
  }
  // The text is kept with its hash (a later edit is compared with it) when it is still what was
  // shown.
  const text = await Deno.readTextFile(config.configPath).catch(() => undefined);
  const shown = text !== undefined && contentHash(text) === trust.hash ? text : undefined;
  await trustHash(config.pmlHome, trust.folder, trust.hash!, shown);
  io.stdout(
    `Trusted ${config.configPath} as it is now; a later change by hand that widens it needs ` +
      `\`pml trust\` again.\n`,
  );
  return 0;
}

/** `pml trust --list`: the trusted workspaces. */
export function runTrustList(io: CliIo): number {
  const config = loadConfig({ env: io.env, cwd: io.cwd, home: io.home });
  const entries = Object.entries(readTrusted(config.pmlHome)).sort(([a], [b]) => (a < b ? -1 : 1));
  if (!entries.length) io.stdout("No trusted workspace.\n");
  for (const [folder, e] of entries) {
    io.stdout(`${folder}  sha256 ${e.sha256}  trusted ${e.trustedAt}\n`);
  }
  return 0;
}

/** `pml untrust`: forgets the workspace; its `.pml.json` applies only where it narrows again. */
export async function runUntrust(io: CliIo): Promise<number> {
  const config = loadConfig({ env: io.env, cwd: io.cwd, home: io.home });
  const was = await untrustWorkspace(config.pmlHome, config.trust.folder);
  io.stdout(
    was
      ? `Forgot the trust of ${config.trust.folder}\n`
      : `${config.trust.folder} was not trusted\n`,
  );
  return 0;
}
