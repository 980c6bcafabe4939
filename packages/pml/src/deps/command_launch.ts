/**
 * A declared raw command's launch ({@link commandLaunch}): the command as the host's `PATH` finds
 * it, inside the OS wall with a private home of its own, reading its command's folder and its own
 * files (`own_files.ts`) where the read model allows them.
 *
 * @module
 */
import { dirname, isAbsolute, join } from "node:path";
import { PmlError } from "../errors.ts";
import type { DependencyMeta } from "./metadata.ts";
import { guardedPaths } from "../config/control_files.ts";
import { realPathOf } from "../exists.ts";
import { detectOsSandbox, type OsSandboxStatus } from "../sandbox/detect_os_sandbox.ts";
import { PROXY_ENV } from "../sandbox/net_bridge.ts";
import { sandboxPolicy } from "../sandbox/policy.ts";
import { unixSocketFilterFile } from "../sandbox/seccomp.ts";
import {
  declaredEnv,
  expandPlaceholders,
  groupOf,
  type LaunchSpec,
  pickEnv,
  refuseWithoutOsWall,
  wallLaunch,
} from "./launch.ts";
import { outsideSecrets, ownFileAllowed, ownFiles } from "./own_files.ts";

/**
 * A declared raw command (`uvx …`, `npx …` without a pinned package). Nothing pins what it runs, so
 * it runs inside the OS sandbox like every other local execution (DESIGN §12), after an explicit
 * approval: the system read-only, the folder of the resolved command read-only (unless it, or where
 * it leads, lies in a hidden secret), the workspace and declared reads read-only, declared writes
 * read-write, a private `HOME` of its own that persists between runs (package runners keep their
 * caches there; the user's `HOME` is not its `HOME`, and is seen as the toolbox shows it), the
 * control files read-only, and the network only to the hosts its metadata declares and `.pml.json`
 * `sandbox.net` grants, through the host-side proxy (never the host's network). It gets `PATH`,
 * that `HOME` and the declared variables. Without an OS sandbox it is refused unless `.pml.json`
 * sets `sandbox.unconfined`; then it runs as declared with the user's `HOME`.
 */
export function commandLaunch(
  meta: DependencyMeta,
  ctx: {
    workspace: string;
    env: Readonly<Record<string, string>>;
    /** Where dependencies keep their files; the command's private home is `<depsDir>/<server>.home`. */
    depsDir: string;
    osSandbox?: OsSandboxStatus;
    unconfined?: boolean;
    deny?: readonly string[];
  },
): LaunchSpec {
  const vars = { workspace: ctx.workspace };
  const x = (vs: readonly string[]) => vs.map((v) => expandPlaceholders(v, vars, meta.server));
  const command = expandPlaceholders(meta.command, vars, meta.server);
  const args = meta.args.map((a) => expandPlaceholders(a, vars, meta.server));
  const declared = pickEnv(ctx.env, declaredEnv(meta));
  const os = ctx.osSandbox ?? detectOsSandbox(ctx.env.PATH);
  if (!os.available) {
    refuseWithoutOsWall(meta.server, os, ctx.unconfined ?? false);
    return {
      server: meta.server,
      command,
      args,
      env: { ...pickEnv(ctx.env, ["PATH", "HOME"]), ...declared },
      cwd: ctx.workspace,
      mode: "command",
      unconfined: os.reason,
    };
  }
  const home = commandHome(ctx.depsDir, meta.server);
  Deno.mkdirSync(home, { recursive: true });
  const path = ctx.env.PATH ?? "/usr/bin:/bin";
  const resolved = resolveCommand(command, path, ctx.workspace);
  if (!resolved) {
    // Said now, in PML's words: bubblewrap would only report a failed execvp.
    throw new PmlError(
      "DEPENDENCY_START_FAILED",
      `Cannot start ${meta.server}: its command "${command}" is not ${
        command.includes("/") ? "a file" : `on the PATH pml runs with (${path})`
      }; install it, or set the full path in private_mcps.${meta.server}.install.command`,
      { details: { server: meta.server, missing: "runtime", command } },
    );
  }
  const write = [home, ...x(meta.permissions.write)];
  const policyWith = (folders: readonly string[], own: readonly string[]) =>
    sandboxPolicy({
      view: "toolbox",
      env: ctx.env,
      deny: ctx.deny,
      read: [ctx.workspace, ...x(meta.permissions.read), ...folders, ...own],
      write,
      denyWrite: guardedPaths([ctx.workspace, ...write]),
      net: meta.permissions.net,
    });
  // The command's folder and its own files (a script among its arguments, with its package) are
  // readable, unless the read model keeps them out (secrets; for its own files also other users'
  // homes, a whole home or the root): an argument is no human's grant. Each is judged where it
  // really is too, since a bind shows what a link leads to (`./tools/x.js`, `./tools` a link into
  // `~/.config/gcloud`, would show that secret's files).
  const base = policyWith(resolved.folders, []);
  const folders = resolved.folders.filter((p) => outsideSecrets(p, base.denyRead));
  const own = ownFiles(args, ctx.workspace).filter((p) =>
    [p, realPathOf(p) ?? p].every((q) => ownFileAllowed(q, ctx.env.HOME)) &&
    outsideSecrets(p, base.denyRead)
  );
  const policy = own.length || folders.length < resolved.folders.length
    ? policyWith(folders, own)
    : base;
  const argv = [resolved.path, ...args];
  const { walled, net, privateDir } = wallLaunch(os, policy, ctx.workspace, argv, {
    seccomp: unixSocketFilterFile(),
  });
  return {
    server: meta.server,
    ...walled,
    env: {
      ...pickEnv(ctx.env, ["PATH"]),
      HOME: home,
      ...(privateDir ? { TMPDIR: `${privateDir}/tmp` } : {}),
      ...declared,
      ...(net ? PROXY_ENV : {}),
    },
    cwd: ctx.workspace,
    mode: "command",
    group: groupOf(policy),
    ...(net ? { netProxy: net } : {}),
    declared: [command, ...args].join(" "),
  };
}

/** The private home of a raw command: its own caches, never the user's home. */
export function commandHome(depsDir: string, server: string): string {
  return join(depsDir, `${server}.home`);
}

/**
 * `command` as the host's `PATH` finds it (or relative to `cwd`), with the folders to bind for it:
 * its own and, when it is a symlink, its target's (argv[0] keeps the name it was called by).
 */
function resolveCommand(
  command: string,
  path: string,
  cwd: string,
): { path: string; folders: string[] } | undefined {
  const candidates = command.includes("/")
    ? [isAbsolute(command) ? command : join(cwd, command)]
    : path.split(":").filter(Boolean).map((dir) => join(dir, command));
  for (const candidate of candidates) {
    try {
      if (Deno.statSync(candidate).isFile) {
        return {
          path: candidate,
          folders: [...new Set([dirname(candidate), dirname(Deno.realPathSync(candidate))])],
        };
      }
    } catch {
      // not there: the next one
    }
  }
  return undefined;
}
