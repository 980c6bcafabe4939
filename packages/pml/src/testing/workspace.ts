/**
 * Test helpers: a temporary workspace and an in-memory MCP client connected to a gateway.
 * Only tests import this folder.
 */
import { join } from "node:path";
import { type Config, loadConfig } from "../config/config.ts";
import { createGateway, type GatewayOptions } from "../gateway/create_gateway.ts";
import type { Gateway } from "../gateway/gateway.ts";
import { createMcpServer, type McpServerOptions } from "../gateway/mcp_server.ts";
import { Client } from "../sdk/client.ts";
import { InMemoryTransport } from "../sdk/in_memory.ts";
import { ApprovalStore, type StoredApproval } from "../permission/approval_store.ts";
import { trustContentSync } from "../config/trust_store.ts";
import { decideAsHuman, humanDecisionDeps } from "../permission/human_decision.ts";
import {
  type CallToolResult,
  type ClientNotification,
  type CreateMessageRequest,
  CreateMessageRequestSchema,
  type CreateMessageResult,
  ElicitRequestSchema,
} from "../sdk/types.ts";

/**
 * A temporary project folder (with `.git`) and a separate home (`HOME`; PML's home is
 * `<home>/.pml`). Removed by `dispose`.
 */
export interface TempWorkspace {
  readonly root: string;
  readonly dir: string;
  readonly home: string;
  /**
   * Writes a file of the workspace. Writing `.pml.json` also trusts that content, as a human who
   * ran `pml trust` would (attack tests write an untrusted one with `Deno.writeTextFileSync`).
   */
  write(rel: string, text: string): string;
  read(rel: string): string;
  [Symbol.asyncDispose](): Promise<void>;
}

/** `.pml.json` allowing every filesystem tool without a question (reads and writes). */
export const FILESYSTEM_ALLOWED = { permissions: { allow: ["filesystem"], ask: [], deny: [] } };

/**
 * Creates a workspace `<tmp>/ws` (real path) with the given `.pml.json` (none if undefined),
 * trusted as a human who ran `pml trust` would (see {@link trustPmlJson}).
 */
export function tempWorkspace(pmlJson?: unknown): TempWorkspace {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-test-" }));
  const dir = join(root, "ws");
  const home = join(root, "home");
  Deno.mkdirSync(join(dir, ".git"), { recursive: true });
  Deno.mkdirSync(home);
  if (pmlJson !== undefined) {
    Deno.writeTextFileSync(join(dir, ".pml.json"), JSON.stringify(pmlJson, null, 2));
    trustPmlJson({ dir, home });
  }
  return {
    root,
    dir,
    home,
    write(rel, text) {
      const path = join(dir, rel);
      Deno.mkdirSync(join(path, ".."), { recursive: true });
      Deno.writeTextFileSync(path, text);
      if (rel === ".pml.json") trustPmlJson({ dir, home });
      return path;
    },
    read: (rel) => Deno.readTextFileSync(join(dir, rel)),
    async [Symbol.asyncDispose]() {
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
}

/**
 * Trusts the current `.pml.json` of `ws` in the trust store of `<home>/.pml` (where `testConfig`,
 * `pmlEnv` and the CLI helpers put PML's home), as `pml trust --yes` does.
 */
export function trustPmlJson(ws: { dir: string; home: string }): void {
  trustContentSync(
    join(ws.home, ".pml"),
    ws.dir,
    Deno.readTextFileSync(join(ws.dir, ".pml.json")),
  );
}

/** The config a `pml` started in `ws` would load (PML_HOME inside the temp root). */
export function testConfig(ws: TempWorkspace, env: Record<string, string> = {}): Config {
  return loadConfig({
    env: { PATH: Deno.env.get("PATH") ?? "", HOME: ws.home, PML_WORKSPACE: ws.dir, ...env },
    cwd: ws.dir,
    home: ws.home,
  });
}

type Decision = "yes" | "always" | "no";

/** A test client's answer to `sampling/createMessage` (`extra` sends progress, has the signal). */
export type SampleHandler = (
  params: CreateMessageRequest["params"],
  extra: {
    signal: AbortSignal;
    sendNotification: (n: ClientNotification) => Promise<void>;
  },
) => unknown;

/** An SDK client connected in memory to a gateway; `elicit` answers elicitation if given. */
export async function connectClient(
  gateway: Gateway,
  opts: {
    elicit?: (message: string) => Decision | "decline";
    /** Declares `sampling` and answers `sampling/createMessage` with this. */
    sample?: SampleHandler;
    /** Options of the MCP face (a `humanMinMs` of 0 takes an instant `decline` as a person's). */
    mcp?: McpServerOptions;
  } = {},
): Promise<Client & AsyncDisposable> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = createMcpServer(gateway, opts.mcp);
  await server.connect(serverSide);
  const client = new Client(
    { name: "test", version: "1" },
    {
      capabilities: {
        ...(opts.elicit ? { elicitation: {} } : {}),
        ...(opts.sample ? { sampling: {} } : {}),
      },
    },
  );
  if (opts.sample) {
    const sample = opts.sample;
    client.setRequestHandler(
      CreateMessageRequestSchema,
      async (req, extra) => await sample(req.params, extra) as CreateMessageResult,
    );
  }
  if (opts.elicit) {
    const elicit = opts.elicit;
    client.setRequestHandler(ElicitRequestSchema, (req) => {
      const answer = elicit(req.params.message);
      return answer === "decline"
        ? { action: "decline" }
        : { action: "accept", content: { decision: answer } };
    });
  }
  await client.connect(clientSide);
  return Object.assign(client, {
    async [Symbol.asyncDispose]() {
      await client.close();
      await server.close();
    },
  });
}

/** A gateway for `ws` (closed by the caller), plus a client. */
export async function gatewayFor(
  ws: TempWorkspace,
  opts: GatewayOptions & {
    env?: Record<string, string>;
    elicit?: (m: string) => Decision | "decline";
    sample?: SampleHandler;
    mcp?: McpServerOptions;
  } = {},
): Promise<{ gateway: Gateway; client: Client } & AsyncDisposable> {
  const gateway = createGateway(testConfig(ws, opts.env), { prewarm: false, ...opts });
  const client = await connectClient(gateway, {
    elicit: opts.elicit,
    sample: opts.sample,
    mcp: opts.mcp,
  });
  return {
    gateway,
    client,
    async [Symbol.asyncDispose]() {
      await client.close();
      await gateway.close();
    },
  };
}

/**
 * Collects what `pml` tells the human (its stderr lines, through `tell`) and reads the approval
 * page links out of them.
 */
export function humanLines(): {
  tell: (line: string) => void;
  lines: string[];
  lastLink(): string;
} {
  const lines: string[] = [];
  return {
    tell: (line) => lines.push(line),
    lines,
    lastLink() {
      const links = lines.join("\n").match(/http:\/\/127\.[0-9.]+:\d+\/\?token=[0-9a-f]+/g);
      if (!links) throw new Error(`no approval link was told to the human: ${lines.join("\n")}`);
      return links[links.length - 1];
    },
  };
}

/** The text of a tool result. */
export function textOf(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.map((c) => c.text ?? "").join("");
}

/**
 * A human's decision on the pending approval `id` (as `pml approve`/`pml deny` or the page give
 * it: recorded, audited, "always" applied), then the agent's `pml:continue`: the result the agent gets.
 */
export async function humanDecides(
  ws: TempWorkspace,
  client: Client,
  id: string,
  decision: Decision,
): Promise<CallToolResult> {
  await decideAsHuman(humanDecisionDeps(testConfig(ws)), id, decision, "cli");
  return await client.callTool({
    name: "pml:continue",
    arguments: { workflow_id: id, decision },
  }) as CallToolResult;
}

/** The stored (human-channel) form of the pending approval `id`. */
export async function storedApproval(ws: TempWorkspace, id: string): Promise<StoredApproval> {
  const stored = await new ApprovalStore(ws.dir, join(ws.home, ".pml")).get(id);
  if (!stored) throw new Error(`no pending approval "${id}" in ${ws.dir}`);
  return stored;
}
