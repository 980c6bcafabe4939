import { printable } from "../sandbox/printable.ts";
import { createAuditLog } from "../audit/audit.ts";
import { type Config, trustNotice } from "../config/config.ts";
import { type ApprovalRequest, Approvals } from "../permission/approvals.ts";
import { type ApprovalMode, ApprovalStore } from "../permission/approval_store.ts";
import { FILESYSTEM_WRITE_TOOLS } from "../config/defaults.ts";
import { ApprovalPage } from "./approval_page.ts";
import { approvalWhy } from "./approval_card.ts";
import { serverToolIn, serverToolOf } from "./server_tool.ts";
import { allChannels, desktopChannel, type Spawn, stderrChannel } from "./human_channels.ts";
import { humanPermissionStore } from "../permission/permission_store.ts";
import { auditDecided, decideAsHuman, thisOwner } from "../permission/human_decision.ts";
import type { RoutingTable } from "../routing/routing.ts";
import { SandboxPool } from "../sandbox/pool.ts";
import type { OsSandboxStatus } from "../sandbox/detect_os_sandbox.ts";
import { STD_MODULES, StdTarget } from "../targets/std/std_target.ts";
import { createStdioTarget, type StdioOptions } from "../targets/stdio/create_stdio_target.ts";
import { RemoteTarget } from "../targets/remote/remote_target.ts";
import { RemoteSignIn } from "../oauth/remote_sign_in.ts";
import { spawnDetached } from "../spawn_detached.ts";
import { DenoModuleTarget, type DenoModuleTargetDeps } from "../targets/deno/deno_module_target.ts";
import { type CloudOptions, createCloud } from "../targets/cloud/create_cloud.ts";
import { createExecute, type ExecuteOptions } from "../execute/mod.ts";
import { Gateway } from "./gateway.ts";
import { UpstreamHub } from "../targets/upstream/upstream_hub.ts";
import { McpPins } from "../registry/mcp_pins.ts";
import { HttpPins } from "../targets/cloud/http_pins.ts";
import { RegistryClient } from "../registry/registry_client.ts";
import { createRegistryStack } from "../targets/deno/_stack.ts";
import { Sampling, type SamplingDeps } from "../sampling/sampling.ts";
import { PROVIDERS } from "../sampling/llm_api.ts";

/**
 * What sampling may read of the environment: the LLM keys `.pml.json` `env` lists (BYOK: never
 * one it does not name), and the base URLs, which are not secret.
 */
function samplingEnv(config: Config): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of Object.values(PROVIDERS)) {
    if (config.byokValues[p.key]) out[p.key] = config.byokValues[p.key];
    if (config.env[p.base]) out[p.base] = config.env[p.base];
  }
  return out;
}

/** PML's own tools a human decides by default: shell and writes (docs/approvals.md). */
const HUMAN_BY_DEFAULT: ReadonlySet<string> = new Set([...FILESYSTEM_WRITE_TOOLS, "shell:exec"]);

/**
 * Who decides `request` under the `.pml.json` `approvals` setting (DESIGN §13 "Who decides"): by
 * default a human decides installs, shell, writes, every `integrity` approval (a changed
 * definition, grant, command or proxy target, a tool that appeared after pinning) and the tools of
 * MCP servers (brought or from a registry) whose pinned definition does not say they only read.
 */
export function approvalMode(
  setting: Config["approvals"],
  request: ApprovalRequest,
): ApprovalMode {
  // What the next agent session reads as instructions is the human's, whatever the setting
  // (targets/std/instruction_files.ts): an agent must not write its successor's instructions.
  if (request.context.instruction_file !== undefined) return "human";
  if (setting) return setting;
  if (request.type === "integrity") return "human";
  if (request.type === "dependency" || request.context.dependency !== undefined) return "human";
  // A `.env` file's content would go to the model's provider (targets/std/secret_files.ts).
  if (request.context.secret_file !== undefined) return "human";
  // A server's tool does what its server decides: moving it behind PML must not hand its approval
  // to the agent (gateway/server_tool.ts).
  const server = serverToolIn(request.context);
  if (request.type === "tool_permission" && server && !server.read_only) return "human";
  const tool = request.context.tool;
  return request.type === "tool_permission" && typeof tool === "string" &&
      HUMAN_BY_DEFAULT.has(tool)
    ? "human"
    : "agent";
}

/** Optional overrides for tests and embedding. */
export interface GatewayOptions {
  readonly routingTable?: RoutingTable;
  readonly approvalTtlMs?: number;
  readonly now?: () => number;
  /** Probe for the OS sandbox once the first `tools/list` is answered (default true). */
  readonly prewarm?: boolean;
  /** Whether an OS sandbox is available (default: look for bubblewrap); injectable for tests. */
  readonly detectOs?: () => OsSandboxStatus;
  /** Stdio dependencies: metadata source, installer, clock, supervision (see `StdioOptions`). */
  readonly stdio?: StdioOptions;
  /** The fetch of remote `private_mcps` servers (default: the global one). */
  readonly remoteFetch?: typeof fetch;
  /** Cloud target: injected fetch and timeouts (see `CloudOptions`). */
  readonly cloud?: CloudOptions;
  /** Sampling for local MCPs: injected fetch for the LLM APIs, loop bounds. */
  readonly sampling?: Pick<SamplingDeps, "fetch" | "bounds">;
  /** Registry deno modules: injected fetch, timeouts, warning sink (see `DenoModuleTargetDeps`). */
  readonly registry?: Partial<
    Pick<DenoModuleTargetDeps, "fetch" | "registryTimeoutMs" | "timeoutMs" | "warn">
  >;
  /** `pml:execute`: execution and per-call timeouts, warm sandbox (see `ExecuteOptions`). */
  readonly execute?: ExecuteOptions & { readonly keepWarm?: boolean };
  /** Where "approval needed" lines go (default: stderr). */
  readonly tell?: (line: string) => void;
  /** Starts the desktop notification program (default: `notify-send`, detached). */
  readonly spawnNotifier?: Spawn;
}

/**
 * Composition root: builds the gateway and its targets from a {@link Config}.
 *
 * @example
 * ```ts
 * const gateway = createGateway(loadConfig({ env: Deno.env.toObject(), cwd: Deno.cwd() }));
 * ```
 */
export function createGateway(config: Config, opts: GatewayOptions = {}): Gateway {
  const audit = createAuditLog(config.workspace);
  const pool = new SandboxPool();
  // "always" rewrites .pml.json: the new content stays trusted when the old one applied.
  const permissions = humanPermissionStore(config);
  const registryDeps = {
    config,
    audit,
    permissions: () => permissions.current,
    now: opts.now,
    ...opts.registry,
  };
  // One registry client, cache and lockfile for every MCP type.
  const stack = createRegistryStack(registryDeps);
  const pins = new McpPins({
    lockfile: stack.lockfile,
    cache: stack.cache,
    audit,
    now: opts.now,
  });
  const httpPins = new HttpPins({
    // http metadata comes from the same registries; tests that fake only the cloud fake it too.
    client: new RegistryClient({
      registries: stack.client.registries,
      fetch: opts.registry?.fetch ?? opts.cloud?.fetch,
      timeoutMs: opts.registry?.registryTimeoutMs,
    }),
    pins,
    now: opts.now,
  });
  // The notifications of fronted servers outside a call, and the workspace as their root.
  const hub = new UpstreamHub({ workspace: config.workspace });
  const cloud = createCloud(
    config,
    { routingTable: opts.routingTable, ...opts.cloud },
    httpPins,
    hub,
  );
  const routing = cloud.routing;
  const std = new StdTarget({ config, pool, audit, routing, detectOs: opts.detectOs });
  const stdio = createStdioTarget(
    config,
    { audit, routing, exclude: Object.keys(STD_MODULES), registry: stack, pins, hub },
    opts.stdio,
  );
  const deno = new DenoModuleTarget({ ...registryDeps, pool, routing, stack });
  // pml's stderr is a human channel: nothing relayed on it moves the cursor or rewrites a line.
  const tell = opts.tell ?? ((line: string) => console.error(printable(line.trimEnd())));
  // Remote servers of private_mcps: proxied by pml itself, before the cloud; signed in with OAuth
  // by their user (tokens under PML's home, the link to the human channels only).
  const signIn = new RemoteSignIn({
    mcps: config.privateMcps,
    env: config.env,
    pmlHome: config.pmlHome,
    tell,
    notify: config.notify === "desktop"
      ? (title, body) =>
        (opts.spawnNotifier ?? spawnDetached)("notify-send", ["--app-name=PML", title, body])
      : undefined,
    audit,
    fetch: opts.remoteFetch,
    now: opts.now,
    onSignedIn: () => gateway.toolsChanged(),
  });
  const remote = new RemoteTarget({
    mcps: config.privateMcps,
    env: config.env,
    pins,
    fetch: opts.remoteFetch,
    signIn,
    hub,
  });
  const store = new ApprovalStore(config.workspace, config.pmlHome, opts.now);
  const page = new ApprovalPage(store, config.workspace, {
    why: approvalWhy(() => permissions.current, () => permissions.fromFile),
    warn: tell,
    // Audited and "always" applied when the human decides (docs/approvals.md).
    decide: (id, decision) =>
      decideAsHuman(
        { store, audit, allowAlways: (tool) => permissions.allowAlways(tool) },
        id,
        decision,
        "page",
      ),
  });
  const link = () => page.link();
  const approvals = new Approvals({
    ttlMs: opts.approvalTtlMs,
    now: opts.now,
    store,
    mode: (request) => approvalMode(config.approvals, request),
    human: allChannels([
      stderrChannel(link, tell),
      ...(config.notify === "desktop" ? [desktopChannel(link, opts.spawnNotifier)] : []),
    ]),
    onDecided: (decided) => auditDecided(audit, decided),
    owner: thisOwner(),
    onUnanswered: (request, err) =>
      audit.write("elicitation_unanswered", {
        tool: request.context.tool,
        approval_type: request.type,
        elicitation: err.how,
        fallback: "approval_required",
      }),
  });
  const execute = createExecute({
    gateway: () => gateway,
    routing,
    approvals,
    audit,
    workspace: config.workspace,
    cloud: cloud.target.cloudMode ? cloud.target : undefined,
    options: opts.execute,
  });
  // The execute sandbox pool warms up on first use: a gateway that never runs pml:execute does not
  // pay ~40 MB and a process start for it.
  const gateway: Gateway = new Gateway({
    permissions,
    approvals,
    routing,
    targets: [std, stdio.target, deno, remote, cloud.target],
    audit,
    metaTools: [execute.tool, ...cloud.metaTools],
    declaredNamespaces: Object.keys(config.privateMcps),
    hub,
    serverTool: serverToolOf({ pins, http: httpPins }),
    resources: [pool, stdio.manager, execute.pool, page, signIn],
    signIns: signIn,
    sampling: new Sampling({
      audit,
      check: (id) => permissions.check(id),
      allowAlways: (id) => permissions.allowAlways(id),
      byokEnv: samplingEnv(config),
      ...opts.sampling,
    }),
    // The bubblewrap probe runs once the client has its tools, not while it waits for them (its
    // process start took ~2 ms of the gateway's thread in the handshake). The read sandbox starts
    // with the first local call: a gateway used as a cloud bridge never holds one (~40 MB).
    afterFirstList: opts.prewarm === false ? undefined : () => std.probeOs(),
    notice: trustNotice(config),
  });
  return gateway;
}
