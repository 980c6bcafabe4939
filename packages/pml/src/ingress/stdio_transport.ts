import type { Transport } from "../sdk/transport.ts";
import type { JSONRPCMessage } from "../sdk/types.ts";
import { isJsonRpcEnvelope } from "../sdk/incoming.ts";

/** Largest JSON-RPC message `pml stdio` reads: 64 MiB (a 12 MB `write_file` fits with room). */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** A message at least this large is followed by `afterLargeMessage` (see {@link LineStdioTransport}). */
export const LARGE_MESSAGE_BYTES = 8 * 1024 * 1024;

/** Bytes read from stdin at a time (raw mode). */
const READ_CHUNK_BYTES = 64 * 1024;

const encoder = new TextEncoder();
/** Lines are cut at a newline byte, never inside a character; a BOM is kept, as text, as it came. */
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

/** The bytes of `pieces` (`total` long) in one array. */
function concat(pieces: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}

/**
 * The process's stdin and stdout as plain reads and writes. Writes are synchronous, as Node's
 * `process.stdout` does them on a pipe: an asynchronous write goes through a thread pool and took
 * ~0.2 ms to reach the client, on every answer.
 */
export interface RawStdio {
  read(buf: Uint8Array): Promise<number | null>;
  writeSync(bytes: Uint8Array): number;
}

const PROCESS_STDIO: RawStdio = {
  read: (buf) => Deno.stdin.read(buf),
  writeSync: (bytes) => Deno.stdout.writeSync(bytes),
};

/** How much of an oversized line is kept to find its request id. */
const ID_PREFIX_BYTES = 4096;

/** Raised through `onerror` (and answered on the wire) when one line exceeds the limit. */
export class MessageTooLargeError extends Error {
  constructor(readonly bytes: number, readonly limit: number, readonly id: string | number | null) {
    super(
      `Request too large: the message is over ${limit} bytes (${
        formatMiB(limit)
      } limit of pml stdio); ` +
        "it was dropped and the gateway keeps serving",
    );
    this.name = "MessageTooLargeError";
  }
}

/** Raised through `onerror` for a line that is JSON but not a JSON-RPC 2.0 object. */
export class NotJsonRpcError extends Error {
  constructor() {
    super("not a JSON-RPC 2.0 message");
    this.name = "NotJsonRpcError";
  }
}

function formatMiB(bytes: number): string {
  return `${Math.round(bytes / (1024 * 1024))} MiB`;
}

/**
 * The request id of a JSON-RPC message from the first bytes of its text, when it is written
 * before the large part (every client we know writes `jsonrpc`, `id`, `method` first).
 */
export function idFromPrefix(prefix: string): string | number | null {
  const match =
    /^\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"]*"\s*,)*\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")/
      .exec(prefix);
  if (!match) return null;
  const raw = match[1];
  try {
    return JSON.parse(raw) as string | number;
  } catch {
    return null;
  }
}

/**
 * MCP stdio server transport: one JSON-RPC message per line on stdin, one per line on stdout.
 *
 * Unlike the SDK's `StdioServerTransport` (which closes the transport, and so ends `pml`, when its
 * 10 MiB buffer fills), a line over `maxMessageBytes` is skipped up to its newline and answered
 * with a JSON-RPC `-32600` error carrying the request's id when it can be read from the line's
 * start; the next line is served as usual. Lines are joined once, not re-concatenated per chunk.
 */
export class LineStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** Runs on every chunk read (the idle collector of `pml stdio` watches for quiet). */
  onread?: () => void;

  #pieces: Uint8Array[] = [];
  #pending = 0;
  #overflow: { bytes: number; prefix: string } | null = null;
  #started = false;
  #closed = false;
  /** Raw mode: messages sent and not yet written ({@link LineStdioTransport.send}). */
  #outgoing: string[] = [];
  #outgoingLength = 0;
  #written?: Promise<void>;

  /**
   * `afterLargeMessage` runs once a message of {@link LARGE_MESSAGE_BYTES} or more has been read
   * or written: an idle V8 keeps the garbage of a 100 MB result (RSS stayed at ~800 MB), so the
   * caller asks for a collection there.
   *
   * Without `stdin` and `stdout` it reads and writes the process's own stdio directly
   * ({@link RawStdio}; `raw` is injectable for tests): Node's stream layers over them held 5–9 MB
   * more of the tree's memory (PSS in `deno task bench stdio`) and cost CPU on every message.
   */
  constructor(
    private readonly stdin?: NodeJS.ReadableStream,
    private readonly stdout?: NodeJS.WritableStream,
    readonly maxMessageBytes: number = MAX_MESSAGE_BYTES,
    private readonly afterLargeMessage: () => void = () => {},
    private readonly raw: RawStdio = PROCESS_STDIO,
  ) {}

  #onData = (chunk: Uint8Array | string) => {
    this.onread?.();
    const bytes = typeof chunk === "string" ? encoder.encode(chunk) : chunk;
    let start = 0;
    while (start <= bytes.length) {
      const nl = bytes.indexOf(10, start);
      const end = nl < 0 ? bytes.length : nl;
      this.#take(bytes.subarray(start, end));
      if (nl < 0) break;
      this.#endLine();
      start = nl + 1;
    }
  };

  #onError = (error: Error) => this.onerror?.(error);
  /** The client went away: the transport closes, as it does at the end of a raw read. */
  #onEnd = () => void this.close();

  #take(part: Uint8Array): void {
    if (part.length === 0) return;
    if (this.#overflow) {
      this.#overflow.bytes += part.length;
      return;
    }
    if (this.#pending + part.length > this.maxMessageBytes) {
      const first = part.subarray(0, ID_PREFIX_BYTES);
      const head = concat([...this.#pieces, first], this.#pending + first.length);
      this.#overflow = {
        bytes: this.#pending + part.length,
        prefix: decoder.decode(head.subarray(0, ID_PREFIX_BYTES)),
      };
      this.#pieces = [];
      this.#pending = 0;
      return;
    }
    this.#pieces.push(part);
    this.#pending += part.length;
  }

  #endLine(): void {
    if (this.#overflow) {
      const { bytes, prefix } = this.#overflow;
      this.#overflow = null;
      const error = new MessageTooLargeError(bytes, this.maxMessageBytes, idFromPrefix(prefix));
      this.onerror?.(error);
      this.send({
        jsonrpc: "2.0",
        id: error.id,
        error: { code: -32600, message: error.message },
      } as unknown as JSONRPCMessage).catch(() => {});
      return;
    }
    const line = this.#pieces.length === 1 ? this.#pieces[0] : concat(this.#pieces, this.#pending);
    this.#pieces = [];
    this.#pending = 0;
    if (line.length >= LARGE_MESSAGE_BYTES) this.afterLargeMessage();
    const text = decoder.decode(line).replace(/\r$/, "");
    if (text.trim() === "") return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch (error) {
      this.onerror?.(error as Error);
      return;
    }
    // The SDK's protocol layer sorts it with its schemas (`sdk/incoming.ts`).
    if (!isJsonRpcEnvelope(message)) {
      this.onerror?.(new NotJsonRpcError());
      return;
    }
    this.onmessage?.(message);
  }

  start(): Promise<void> {
    if (this.#started) throw new Error("LineStdioTransport already started");
    this.#started = true;
    if (this.stdin) {
      this.stdin.on("data", this.#onData);
      this.stdin.on("error", this.#onError);
      this.stdin.on("end", this.#onEnd);
      this.stdin.on("close", this.#onEnd);
    } else void this.#readRaw();
    return Promise.resolve();
  }

  /** Reads the process's stdin until it ends (the client went away), then closes. */
  async #readRaw(): Promise<void> {
    const buf = new Uint8Array(READ_CHUNK_BYTES);
    try {
      for (;;) {
        const n = await this.raw.read(buf);
        if (n === null || this.#closed) break;
        // A copy: the pieces of a line outlive this read, the buffer is read into again.
        this.#onData(buf.slice(0, n));
      }
    } catch (err) {
      if (!this.#closed) this.onerror?.(err as Error);
    }
    await this.close();
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    if (this.stdin) {
      this.stdin.off("data", this.#onData);
      this.stdin.off("error", this.#onError);
      this.stdin.off("end", this.#onEnd);
      this.stdin.off("close", this.#onEnd);
      if (this.stdin.listenerCount("data") === 0) this.stdin.pause();
    }
    this.#pieces = [];
    this.#pending = 0;
    this.onclose?.();
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    const text = JSON.stringify(message) + "\n";
    const stdout = this.stdout;
    if (!stdout) {
      this.#outgoing.push(text);
      this.#outgoingLength += text.length;
      return this.#written ??= new Promise((resolve, reject) =>
        queueMicrotask(() => {
          this.#written = undefined;
          try {
            this.#writeOutgoing();
            resolve();
          } catch (err) {
            reject(err);
          }
        })
      );
    }
    // Once a large message has been written out, its text is garbage.
    const written = text.length >= LARGE_MESSAGE_BYTES ? () => this.afterLargeMessage() : undefined;
    return new Promise((resolve) => {
      if (stdout.write(text, written)) resolve();
      else stdout.once("drain", () => resolve());
    });
  }

  /**
   * Writes every message sent since the last write in one synchronous write. The answers a chunk of
   * a dependency's output completes reach `send` in the same turn of the microtask queue: one write
   * (one system call, one wake-up of the client) carries them all, as the dependency's own pipe
   * does. A lone answer goes out before the event loop runs again, so it waits for nothing.
   */
  #writeOutgoing(): void {
    const text = this.#outgoing.length === 1 ? this.#outgoing[0] : this.#outgoing.join("");
    const large = this.#outgoingLength >= LARGE_MESSAGE_BYTES;
    this.#outgoing = [];
    this.#outgoingLength = 0;
    const bytes = encoder.encode(text);
    for (let off = 0; off < bytes.length;) off += this.raw.writeSync(bytes.subarray(off));
    if (large) this.afterLargeMessage();
  }
}
