/**
 * Workflow beside the read model's walls (DESIGN §13 "Sandbox model"): a project under the user's
 * home runs a raw command from its own `node_modules`, as most users' projects do. A temporary
 * HOME (the spawned `pml`'s `HOME`) holds the project, at a path with a space, whose `node_modules`
 * is a link to another folder of that home (a shared install, as a linked worktree or a package
 * store makes), and secrets beside it: `~/.ssh/id_rsa`, `~/.aws/credentials` where `~/.aws` links
 * into `~/dotfiles/aws` (as dotfiles managers make it), PML's own `~/.pml/credentials.json`. The
 * server (a plain Node.js MCP server importing a dependency of its package) must start and read
 * its own files through a spawned `pml stdio`; each secret must stay unreadable from it, by either
 * path. The same from a project inside a hidden folder (`~/.config/gcloud/infra tools`): the
 * workspace is the human's grant, more specific than the secret, and the rest of the home's
 * secrets stay hidden.
 *
 * Both links once kept every such sandbox from starting: bubblewrap cannot mount onto a path whose
 * link lies inside a folder it already shows (`os_sandbox.ts` `mountPoint`).
 */
import { join } from "node:path";
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { textOf, trustPmlJson } from "../../packages/pml/src/testing/workspace.ts";
import { connectStdio } from "../e2e/_spawn.ts";

const MARK = "HOME_SECRET_MARK_77";

const FIXTURE = join(import.meta.dirname!, "..", "fixtures", "plain_server.mjs");
const ASKED = 'String(msg.params?.arguments?.prompt ?? "")';

/**
 * The server: the plain fixture server importing a dependency of its package, whose one tool
 * (`ask`) answers with the text of the file its prompt names, or `refused:<code>`.
 */
function server(): string {
  const fixture = Deno.readTextFileSync(FIXTURE);
  assert(fixture.includes(ASKED), "the fixture answers with its prompt");
  return `import { readFileSync } from "node:fs";
import { greeting } from "probe-dep";
if (greeting !== "probe") throw new Error("no dependency");
function read(path) {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    return "refused:" + e.code;
  }
}
${fixture.replace(ASKED, `read(${ASKED})`)}`;
}

function write(path: string, text: string): string {
  Deno.mkdirSync(join(path, ".."), { recursive: true });
  Deno.writeTextFileSync(path, text);
  return path;
}

/**
 * A HOME with the secrets and a shared `node_modules` (`~/shared modules/node_modules`) holding the
 * server's package and its dependency. Returns the secrets' paths.
 */
function home(dir: string): { secrets: string[]; modules: string } {
  // `~/.aws` links into a dotfiles folder, as dotfiles managers make it.
  Deno.mkdirSync(join(dir, "dotfiles", "aws"), { recursive: true });
  Deno.symlinkSync(join(dir, "dotfiles", "aws"), join(dir, ".aws"));
  const secrets = [
    write(join(dir, ".ssh", "id_rsa"), MARK),
    write(join(dir, ".aws", "credentials"), MARK),
    join(dir, "dotfiles", "aws", "credentials"),
    write(join(dir, ".pml", "credentials.json"), JSON.stringify({ apiKey: MARK })),
  ];
  const modules = join(dir, "shared modules", "node_modules");
  write(
    join(modules, "probe-server", "package.json"),
    '{ "name": "probe-server", "type": "module" }',
  );
  write(join(modules, "probe-server", "index.mjs"), server());
  write(
    join(modules, "probe-dep", "package.json"),
    '{ "name": "probe-dep", "type": "module", "main": "index.js" }',
  );
  write(join(modules, "probe-dep", "index.js"), 'export const greeting = "probe";\n');
  return { secrets, modules };
}

/** A trusted project at `dir` whose `node_modules` links to `modules`, running the server raw. */
function project(dir: string, homeDir: string, modules: string): { dir: string; home: string } {
  Deno.mkdirSync(join(dir, ".git"), { recursive: true });
  Deno.symlinkSync(modules, join(dir, "node_modules"));
  write(join(dir, "README.md"), "the project's own file\n");
  write(
    join(dir, ".pml.json"),
    JSON.stringify({
      approvals: "agent",
      permissions: { allow: ["probe"], ask: [], deny: [] },
      private_mcps: {
        probe: {
          type: "stdio",
          install: {
            command: "node",
            args: [join(dir, "node_modules", "probe-server", "index.mjs")],
          },
        },
      },
    }),
  );
  const ws = { dir, home: homeDir };
  trustPmlJson(ws);
  return ws;
}

for (
  const [where, rel] of [
    ["a project under HOME at a path with a space", "code/my project"],
    ["a project inside a hidden folder of HOME", ".config/gcloud/infra tools"],
  ] as const
) {
  Deno.test(`workflow: ${where}, its raw command from its linked node_modules starts and reads its own files; the home's secrets stay hidden from it`, async () => {
    const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-home-project-" }));
    try {
      const homeDir = join(root, "home");
      const { secrets, modules } = home(homeDir);
      const ws = project(join(homeDir, rel), homeDir, modules);
      await using client = await connectStdio(ws, { elicit: () => "yes" });
      const read = async (path: string) =>
        textOf(await client.callTool({ name: "probe__ask", arguments: { prompt: path } }));

      assertEquals(await read(join(ws.dir, "README.md")), "the project's own file\n");
      assertEquals(
        await read(join(ws.dir, "node_modules", "probe-dep", "package.json")),
        '{ "name": "probe-dep", "type": "module", "main": "index.js" }',
      );
      for (const secret of secrets) {
        const got = await read(secret);
        assert(!got.includes(MARK), `${secret} was read from the sandbox: ${got}`);
      }
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  });
}
