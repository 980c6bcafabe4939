import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { textOf } from "../testing/workspace.ts";
import { MAX_SIGN_INS, RemoteSignIn } from "./remote_sign_in.ts";

const RESOURCE = "https://mcp.example/mcp";

Deno.test("sign-in waits: an agent asking again while the human is away keeps waiting; a server that asks again right after each sign-in is asked at most MAX_SIGN_INS times", async () => {
  const home = await Deno.makeTempDir();
  let now = 1_000;
  const signIn = new RemoteSignIn({
    mcps: {},
    env: {},
    pmlHome: join(home, ".pml"),
    tell: () => {},
    now: () => now,
  });
  try {
    const resume = () => Promise.resolve({ content: [{ type: "text" as const, text: "ran" }] });
    // The human is away: every call waits, none fails.
    for (let i = 0; i < MAX_SIGN_INS + 2; i++) {
      now += 10;
      const r = await signIn.wait("s", RESOURCE, resume);
      assertEquals(r.structuredContent?.status, "waiting_for_human", textOf(r));
    }
    // The human signs in each time, and the server asks again at once.
    let last;
    for (let i = 0; i < MAX_SIGN_INS; i++) {
      now += 10;
      await signIn.store.update("s", RESOURCE, (r) => ({
        ...r,
        tokens: { access_token: `t${i}`, token_type: "bearer" },
        tokensSavedAt: now,
      }));
      now += 10;
      last = await signIn.wait("s", RESOURCE, resume);
    }
    assert(last?.isError, JSON.stringify(last));
    assertStringIncludes(textOf(last!), `right after each of ${MAX_SIGN_INS} sign-ins`);
    // A call that went through starts the count again.
    signIn.succeeded("s");
    now += 10;
    const again = await signIn.wait("s", RESOURCE, resume);
    assertEquals(again.structuredContent?.status, "waiting_for_human");
  } finally {
    await signIn.close();
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("sign-in waits: pml:continue runs the call once signed in, `no` gives it up, an unknown id is an error", async () => {
  const home = await Deno.makeTempDir();
  const signIn = new RemoteSignIn({
    mcps: {},
    env: {},
    pmlHome: join(home, ".pml"),
    tell: () => {},
  });
  try {
    let ran = 0;
    const resume =
      () => (ran++, Promise.resolve({ content: [{ type: "text" as const, text: "ran" }] }));
    await signIn.store.update("s", RESOURCE, (r) => ({ ...r, waitingSince: 1 }));
    const id = (await signIn.wait("s", RESOURCE, resume)).structuredContent?.workflow_id as string;
    assert(signIn.owns(id));
    assertEquals((await signIn.continue(id, "yes")).structuredContent?.status, "waiting_for_human");
    await signIn.store.update("s", RESOURCE, (r) => ({ ...r, waitingSince: undefined }));
    assertEquals(textOf(await signIn.continue(id, "yes")), "ran");
    assertEquals(ran, 1);
    assert(!signIn.owns(id), "answered once");
    const other = (await signIn.wait("s", RESOURCE, resume)).structuredContent
      ?.workflow_id as string;
    assert((await signIn.continue(other, "no")).isError);
    assertEquals(ran, 1);
    assert((await signIn.continue("nope", "yes")).isError);
  } finally {
    await signIn.close();
    await Deno.remove(home, { recursive: true });
  }
});
