/**
 * Attack: a workspace folder is flipped between a real folder and a symlink to a folder outside
 * the workspace while reads and writes go through it (the gateway checks the real path, the
 * sandbox opens the path a moment later: a time-of-check/time-of-use race). The OS sandbox's mount
 * namespace does not contain the outside folder, so no read may return its content and no write
 * may land there, whichever way the race goes.
 */
import { join } from "node:path";
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";

const READS = 400;
const WRITES = 200;

for (const target of ["a folder of the user", "/etc"]) {
  Deno.test(`attack symlink_race: flipping a folder to a symlink to ${target} during calls never reads or writes there`, async () => {
    await using ws = tempWorkspace({ permissions: { allow: ["filesystem"] } });
    // /etc/hostname stands for any system file; the user folder holds a marked secret.
    const system = target === "/etc";
    const outside = system ? "/etc" : join(ws.root, "outside");
    const file = system ? "hostname" : "x.txt";
    if (!system) {
      Deno.mkdirSync(outside);
      Deno.writeTextFileSync(join(outside, file), "OUTSIDE_SECRET");
    }
    const secret = Deno.readTextFileSync(join(outside, file)).trim();
    const real = join(ws.dir, "d-real");
    const link = join(ws.dir, "d-link");
    const d = join(ws.dir, "d");
    Deno.mkdirSync(real);
    Deno.writeTextFileSync(join(real, file), "inside");
    Deno.symlinkSync(outside, link);
    Deno.renameSync(real, d);
    // The flipper is another process, so the swap really races the gateway and the sandbox.
    const flipper = new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `const [d, real, link] = Deno.args;
       for (;;) {
         Deno.renameSync(d, real); Deno.renameSync(link, d);
         Deno.renameSync(d, link); Deno.renameSync(real, d);
       }`,
        d,
        real,
        link,
      ],
      env: { DENO_NO_UPDATE_CHECK: "1" },
      stdout: "null",
      stderr: "null",
    }).spawn();
    // Wait until the flipper runs: `d` seen as a folder and as a link.
    const seen = new Set<boolean>();
    for (let i = 0; seen.size < 2 && i < 100_000; i++) {
      try {
        seen.add(Deno.lstatSync(d).isSymlink);
      } catch { /* mid-swap */ }
      if (i % 100 === 0) await new Promise((r) => setTimeout(r, 1));
    }
    assertEquals(seen.size, 2, "the flipper is running");
    await using g = await gatewayFor(ws);
    let leaked = 0;
    let insideReads = 0;
    let reads = 0;
    const writes = Array.from({ length: WRITES }, (_, i) =>
      g.client.callTool({
        name: "filesystem:write_file",
        arguments: { path: `d/w${i}.txt`, content: "planted" },
      }));
    // Waves of reads until both outcomes of the race were seen (or the budget is spent).
    for (let wave = 0; wave < 20 && (reads < READS || insideReads === 0); wave++) {
      await Promise.all(Array.from({ length: 100 }, async () => {
        const text = textOf(
          await g.client.callTool({
            name: "filesystem:read_file",
            arguments: { path: `d/${file}` },
          }),
        );
        reads++;
        if (text.trim() === secret) leaked++;
        if (text === "inside") insideReads++;
      }));
    }
    await Promise.all(writes);
    flipper.kill("SIGKILL");
    await flipper.status;

    assertEquals(leaked, 0, "a read returned the outside file");
    const planted = [...Deno.readDirSync(outside)].map((e) => e.name).filter((n) =>
      /^w\d+\.txt$/.test(n)
    );
    assertEquals(planted, [], "a write landed outside the workspace");
    assert(insideReads > 0, "the race did not starve every read (the test exercised both states)");
    console.error(
      `attack symlink_race: ${reads + WRITES} attempts, 0 outside (${insideReads} reads inside)`,
    );
  });
}
