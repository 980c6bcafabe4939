import { join } from "node:path";
import type { AuditLog } from "../../audit/audit.ts";
import type { Config } from "../../config/config.ts";
import { DepsState } from "../../deps/deps_state.ts";
import { type Installer, NpmInstaller } from "../../deps/installer.ts";
import type { MetadataSource } from "../../deps/metadata.ts";
import { type NpmResolver, NpmViewResolver } from "../../deps/npm_resolver.ts";
import { CatalogueSource, ChainSource, PrivateMcpSource } from "../../deps/sources.ts";
import type { RoutingResolver } from "../../routing/routing.ts";
import type { McpPins } from "../../registry/mcp_pins.ts";
import { RegistryMetadataSource } from "../../registry/metadata_source.ts";
import type { RegistryStack } from "../deno/_stack.ts";
import type { OsSandboxStatus } from "../../sandbox/detect_os_sandbox.ts";
import type { Clock } from "./clock.ts";
import { PidFile } from "./pid_file.ts";
import { StdioProcessManager, type Supervision } from "./process_manager.ts";
import { StdioTarget } from "./stdio_target.ts";
import type { UpstreamHub } from "../upstream/upstream_hub.ts";

/** Overrides for tests and embedding (`createGateway(config, { stdio })`). */
export interface StdioOptions {
  /** Registry metadata, consulted after `.pml.json` `private_mcps` (default: the built-in catalogue). */
  readonly source?: MetadataSource;
  readonly installer?: Installer;
  readonly clock?: Clock;
  readonly supervision?: Partial<Supervision>;
  readonly callTimeoutMs?: number;
  /** Install folder (default `<workspace>/.pml/deps`). */
  readonly depsDir?: string;
  readonly denoPath?: string;
  /** The OS sandbox as detected (default: look for bubblewrap once). */
  readonly osSandbox?: OsSandboxStatus;
  /** Pins hand-written `npx` entries of `private_mcps` (default: `npm view`). */
  readonly resolver?: NpmResolver;
}

/**
 * Builds the {@link StdioTarget} and its {@link StdioProcessManager} from the config. Metadata:
 * `private_mcps`, then the configured registries (when `registry` is given), then the built-in
 * catalogue. Namespaces in `exclude` (those of the built-in std tools) are never taken from the
 * registries or the catalogue.
 */
export function createStdioTarget(
  config: Config,
  deps: {
    audit: AuditLog;
    routing: RoutingResolver;
    exclude?: Iterable<string>;
    /** The session's registry client, cache and lockfile. */
    registry?: RegistryStack;
    /** Lockfile pins of metadata and tool definitions. */
    pins?: McpPins;
    /** Where the servers' notifications outside a call go; the workspace as their root. */
    hub?: UpstreamHub;
  },
  opts: StdioOptions = {},
): { target: StdioTarget; manager: StdioProcessManager } {
  const manager = new StdioProcessManager({
    clock: opts.clock,
    supervision: opts.supervision,
    pids: new PidFile(config.workspace),
    hub: deps.hub,
  });
  const registry = deps.registry;
  // A namespace defined in private_mcps (of any type) is never looked up anywhere else.
  const exclude = [...(deps.exclude ?? []), ...Object.keys(config.privateMcps)];
  const source = new ChainSource([
    new PrivateMcpSource(config.privateMcps, {
      resolver: opts.resolver ?? new NpmViewResolver({ env: config.env }),
      pinned: async (server) => (await deps.pins?.locked(`pml.mcp.${server}.server`))?.package,
      workspace: config.workspace,
    }),
    ...(opts.source ? [opts.source] : [
      ...(registry
        ? [
          new RegistryMetadataSource({
            client: registry.client,
            cache: registry.cache,
            lockfile: registry.lockfile,
            exclude,
            serverRouted: (ns) => deps.routing.routeOf(`${ns}:*`) === "server",
          }),
        ]
        : []),
      new CatalogueSource(undefined, { exclude }),
    ]),
  ]);
  const target = new StdioTarget({
    source,
    installer: opts.installer ?? new NpmInstaller({ env: config.env }),
    manager,
    state: new DepsState(config.workspace),
    audit: deps.audit,
    routing: deps.routing,
    workspace: config.workspace,
    // The BYOK keys `.pml.json` lists may come from the workspace `.env` (config/dotenv.ts).
    env: { ...config.env, ...config.byokValues },
    depsDir: opts.depsDir ?? join(config.workspace, ".pml", "deps"),
    denoPath: opts.denoPath ?? Deno.execPath(),
    denoDir: join(config.pmlHome, "deno"),
    callTimeoutMs: opts.callTimeoutMs,
    unconfined: config.sandbox.unconfined,
    osSandbox: opts.osSandbox,
    net: config.sandbox.net,
    deny: config.sandbox.deny,
    pins: deps.pins,
  });
  return { target, manager };
}
