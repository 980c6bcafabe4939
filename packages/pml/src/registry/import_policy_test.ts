import { assertEquals, assertRejects } from "../testing/assert.ts";
import { checkImports, isPinnedNpm, registryImport } from "./import_policy.ts";
import { scanModule } from "./module_scan.ts";

const REG = ["https://reg.example", "http://127.0.0.1:8080/base"];

async function refused(code: string): Promise<string[]> {
  return checkImports((await scanModule(code)).imports, REG).map((v) => v.specifier);
}

Deno.test("import policy: pinned npm and the registry pass", async () => {
  assertEquals(
    await refused(`
      import { z } from "npm:zod@4.6.7";
      import x from "npm:@scope/pkg@1.2.3/sub/path";
      import y from "https://reg.example/mcp/acme.tools.greet.hello.ab12";
      import w from "http://127.0.0.1:8080/base/mcp/acme.tools.greet.hello";
      import type { T } from "file:///etc/passwd";
      export type { U } from "./types.ts";
      const m = await import("npm:zod@4.6.7");
    `),
    [],
  );
});

Deno.test("import policy: everything else is refused", async () => {
  assertEquals(
    await refused(`
      import a from "file:///etc/passwd";
      import b from "/home/u/secret.json" with { type: "json" };
      import c from "./local.ts";
      import d from "npm:zod";
      import e from "npm:zod@^4.0.0";
      import f from "https://evil.example/mcp/acme.tools.greet.hello.ab12";
      import g from "https://reg.example/other/path.ts";
      import h from "node:fs";
      import i from "jsr:@std/fs@1.0.0";
      import j from "data:text/javascript,export default 1";
      export * from "../x.ts";
      export { k } from "https://reg.example/mcp/a.b.c.d?x=1";
      const l = await import("file:///etc/hostname");
      const n = await import(\`file:///etc/\${"passwd"}\`);
      import o = require("fs");
    `),
    [
      "file:///etc/passwd",
      "/home/u/secret.json",
      "./local.ts",
      "npm:zod",
      "npm:zod@^4.0.0",
      "https://evil.example/mcp/acme.tools.greet.hello.ab12",
      "https://reg.example/other/path.ts",
      "node:fs",
      "jsr:@std/fs@1.0.0",
      "data:text/javascript,export default 1",
      "../x.ts",
      "https://reg.example/mcp/a.b.c.d?x=1",
      "file:///etc/hostname",
      "(computed)",
      "fs",
    ],
  );
});

Deno.test("import policy: helpers", () => {
  assertEquals(isPinnedNpm("npm:a@1.2.3/../../x"), false);
  assertEquals(isPinnedNpm("npm:a@1.2.3-beta.1"), true);
  assertEquals(registryImport("https://reg.example/mcp/a.b.c.d.0f0f", REG), {
    registry: "https://reg.example",
    fqdn: "a.b.c.d.0f0f",
  });
  assertEquals(registryImport("https://reg.example/mcp/a.b.c.d.0f0f/../x", REG), undefined);
});

Deno.test("module scan: tools used, exports, literal __meta__, syntax errors", async () => {
  const s = await scanModule(`
    export const __meta__ = { description: "d", inputSchema: { type: "object" } } as const;
    export async function run(_a: unknown, { mcp }: any) {
      await mcp.filesystem.read_file({});
      await mcp?.json.parse({});
      return mcp[x].y();
    }
    const helper = 1;
    export { helper as renamed };
  `);
  assertEquals(s.toolsUsed, ["filesystem:read_file", "json:parse"]);
  assertEquals(s.dynamicMcp, true);
  assertEquals(s.exports, ["__meta__", "run", "renamed"]);
  assertEquals(s.meta, { description: "d", inputSchema: { type: "object" } });
  await assertRejects(() => scanModule("export async function ("), SyntaxError, "Cannot parse");
});
