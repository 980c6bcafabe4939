/**
 * The floor of a gateway that is a process of its own: a relay that reads every message, as any
 * gateway must to route it, and does nothing else. It runs where `pml stdio` or `pml serve` runs in
 * a bench, so the bench can print what the process hop alone costs on this machine next to what PML
 * costs (docs/speed.md, "Floors"). Not a product: no permissions, no validation, no limits.
 *
 *   deno run -A bench/_relay.ts stdio <command> [args…]   JSON-RPC lines to and from a stdio server
 *   deno run -A bench/_relay.ts cloud <url> <api key>     JSON-RPC lines to `POST <url>` (JSON mode)
 *   deno run -A bench/_relay.ts http <url>                HTTP on a free loopback port to <url>;
 *                                                         prints the port as the first stdout line
 *
 * The stdio modes parse each line and write it again (`JSON.parse`, `JSON.stringify`); the lines of
 * one read go out in one write, as PML's own transports batch them.
 */
const encoder = new TextEncoder();

/** Calls `onLines` with the complete lines of each chunk (a partial last line waits). */
async function eachChunkLines(
  source: ReadableStream<Uint8Array>,
  onLines: (lines: string[]) => void | Promise<void>,
): Promise<void> {
  const decoder = new TextDecoder();
  let partial = "";
  for await (const chunk of source) {
    const lines = (partial + decoder.decode(chunk, { stream: true })).split("\n");
    partial = lines.pop()!;
    const full = lines.filter((line) => line.trim() !== "");
    if (full.length) await onLines(full);
  }
}

const reserialize = (lines: string[]) =>
  encoder.encode(lines.map((line) => JSON.stringify(JSON.parse(line)) + "\n").join(""));

const writeOut = (bytes: Uint8Array) => {
  for (let done = 0; done < bytes.length;) done += Deno.stdout.writeSync(bytes.subarray(done));
};

async function stdio([command, ...args]: string[]): Promise<void> {
  const child = new Deno.Command(command, {
    args,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const toChild = child.stdin.getWriter();
  await Promise.all([
    eachChunkLines(Deno.stdin.readable, (lines) => toChild.write(reserialize(lines))),
    eachChunkLines(child.stdout, (lines) => writeOut(reserialize(lines))),
  ]);
}

/** The server must answer in JSON mode (pml-server does); notifications get no line back. */
async function cloud([url, key]: string[]): Promise<void> {
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    authorization: `Bearer ${key}`,
  };
  const post = async (line: string) => {
    const body = JSON.stringify(JSON.parse(line));
    const response = await fetch(url, { method: "POST", headers, body });
    const text = await response.text();
    if (text) writeOut(encoder.encode(JSON.stringify(JSON.parse(text)) + "\n"));
  };
  await eachChunkLines(Deno.stdin.readable, (lines) => {
    for (const line of lines) void post(line);
  });
}

async function http([upstream]: string[]): Promise<void> {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const { pathname, search } = new URL(req.url);
    // The request is read and parsed, as a gateway must to know where it goes; the answer of the
    // one upstream is streamed back unread.
    const body = req.body ? await req.text() : undefined;
    if (body) JSON.parse(body);
    const response = await fetch(new URL(pathname + search, upstream), {
      method: req.method,
      headers: req.headers,
      body,
    });
    return new Response(response.body, { status: response.status, headers: response.headers });
  });
  writeOut(encoder.encode(`${server.addr.port}\n`));
  await server.finished;
}

const [mode, ...rest] = Deno.args;
const modes: Record<string, (args: string[]) => Promise<void>> = { stdio, cloud, http };
if (!modes[mode]) {
  console.error(`usage: _relay.ts stdio <command…> | cloud <url> <key> | http <url>`);
  Deno.exit(2);
}
await modes[mode](rest);
