import { assertEquals, assertStringIncludes } from "../../testing/assert.ts";
import type { JSONRPCMessage } from "../../sdk/types.ts";
import { ChildTransport } from "./child_transport.ts";

/** A child that writes `script`'s output as its stdout, then waits for stdin to close. */
function childWriting(chunks: readonly string[]): ChildTransport {
  const script = `
    const enc = new TextEncoder();
    for (const c of ${JSON.stringify(chunks)}) {
      await Deno.stdout.write(enc.encode(c));
      await new Promise((r) => setTimeout(r, 20));
    }
    for await (const _ of Deno.stdin.readable) { /* until the host closes it */ }
  `;
  return new ChildTransport({
    server: "lines",
    command: Deno.execPath(),
    args: ["eval", "--quiet", script],
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", NO_COLOR: "1" },
    cwd: Deno.cwd(),
    mode: "command",
  });
}

Deno.test("a server's bad lines are reported and skipped; the messages around them arrive whole", async () => {
  const transport = childWriting([
    "starting up, not JSON\n",
    '{"no":"envelope"}\n',
    "[1,2]\n",
    '{"jsonrpc":"2.0","method":"notifications/a"}\r\n',
    '{"jsonrpc":"2.0","meth',
    'od":"notifications/split","params":{"text":"é across chunks"}}\n',
    '{"jsonrpc":"2.0","id":7,"result":{}}\n',
  ]);
  const messages: JSONRPCMessage[] = [];
  const errors: string[] = [];
  let done!: () => void;
  const last = new Promise<void>((resolve) => (done = resolve));
  transport.onmessage = (m) => {
    messages.push(m);
    if ("id" in m) done();
  };
  transport.onerror = (e) => errors.push(e.message);
  await transport.start();
  try {
    await last;
    assertEquals(messages, [
      { jsonrpc: "2.0", method: "notifications/a" },
      { jsonrpc: "2.0", method: "notifications/split", params: { text: "é across chunks" } },
      { jsonrpc: "2.0", id: 7, result: {} },
    ]);
    assertEquals(errors.length, 3, errors.join("\n"));
    assertStringIncludes(errors[1], 'not a JSON-RPC 2.0 message: {"no":"envelope"}');
    assertStringIncludes(errors[2], "not a JSON-RPC 2.0 message: [1,2]");
  } finally {
    await transport.close(0);
  }
});
