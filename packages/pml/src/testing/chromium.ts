/**
 * Test helper: a headless Chromium (Debian's `chromium`, installed by `.ci/run`) driven over the
 * DevTools protocol with Deno's own WebSocket: no browser download, no npm package. Only tests
 * import this folder.
 */
import { join } from "node:path";
import { waitForLine } from "./wait_for_line.ts";

/** One page of a headless browser. */
export interface Browser extends AsyncDisposable {
  /** Opens `url` and waits until the document has loaded. */
  goto(url: string): Promise<void>;
  /** Evaluates `expression` in the page (awaiting a promise) and returns its JSON value. */
  eval<T = unknown>(expression: string): Promise<T>;
  /** Clicks the element `selector` and waits for the navigation it starts to finish loading. */
  clickAndWait(selector: string): Promise<void>;
  /** A PNG of the viewport. */
  screenshot(): Promise<Uint8Array>;
  /** Every cookie the browser holds (name, value, domain), as an attacker with the profile would see them. */
  cookies(): Promise<{ name: string; value: string; domain: string }[]>;
}

/** The Chromium binary, or `undefined` when it is not installed. */
export function findChromium(): string | undefined {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    for (const name of ["chromium", "chromium-browser"]) {
      try {
        if (Deno.statSync(join(dir, name)).isFile) return join(dir, name);
      } catch { /* not here */ }
    }
  }
  return undefined;
}

/** Starts a headless Chromium with a fresh profile and connects to its first page. */
export async function launchChromium(): Promise<Browser> {
  const bin = findChromium();
  if (!bin) throw new Error("chromium is not installed (apt-get install chromium; .ci/run does)");
  const profile = await Deno.makeTempDir({ prefix: "pml-chromium-" });
  const child = new Deno.Command(bin, {
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-extensions",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--window-size=1100,1400",
      "--remote-debugging-address=127.0.0.1",
      "--remote-debugging-port=0",
      `--user-data-dir=${profile}`,
      "about:blank",
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stop = async () => {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
    await child.status;
    await Deno.remove(profile, { recursive: true }).catch(() => {});
  };
  try {
    const port = await devtoolsPort(child.stderr);
    const pages = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json() as {
      type: string;
      webSocketDebuggerUrl: string;
    }[];
    const page = pages.find((p) => p.type === "page");
    if (!page) throw new Error("chromium opened no page");
    const cdp = await Cdp.connect(page.webSocketDebuggerUrl);
    await cdp.send("Page.enable");
    const browser: Browser = {
      async goto(url) {
        const loaded = cdp.next("Page.loadEventFired");
        await cdp.send("Page.navigate", { url });
        await loaded;
      },
      async eval<T>(expression: string) {
        const r = await cdp.send("Runtime.evaluate", {
          expression,
          awaitPromise: true,
          returnByValue: true,
        }) as { result: { value: T }; exceptionDetails?: unknown };
        if (r.exceptionDetails) throw new Error(JSON.stringify(r.exceptionDetails));
        return r.result.value;
      },
      async clickAndWait(selector) {
        const loaded = cdp.next("Page.loadEventFired");
        await browser.eval(`document.querySelector(${JSON.stringify(selector)}).click()`);
        await loaded;
      },
      async screenshot() {
        const r = await cdp.send("Page.captureScreenshot", { format: "png" }) as { data: string };
        return Uint8Array.from(atob(r.data), (c) => c.charCodeAt(0));
      },
      async cookies() {
        const r = await cdp.send("Storage.getCookies") as {
          cookies: { name: string; value: string; domain: string }[];
        };
        return r.cookies;
      },
      async [Symbol.asyncDispose]() {
        cdp.close();
        await stop();
      },
    };
    return browser;
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Reads Chromium's stderr until it prints its DevTools endpoint; the rest is drained. */
async function devtoolsPort(stderr: ReadableStream<Uint8Array>): Promise<number> {
  const listening = /DevTools listening on ws:\/\/127\.0\.0\.1:(\d+)\//;
  return Number((await waitForLine(stderr, listening, "chromium")).match[1]);
}

/** A minimal DevTools protocol client: commands with ids, and waiting for one event. */
class Cdp {
  #id = 0;
  readonly #calls = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  readonly #waiters: { method: string; resolve(v: unknown): void }[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.onmessage = (e) => {
      const msg = JSON.parse(e.data as string);
      if (msg.id !== undefined) {
        const call = this.#calls.get(msg.id);
        this.#calls.delete(msg.id);
        if (msg.error) call?.reject(new Error(JSON.stringify(msg.error)));
        else call?.resolve(msg.result);
        return;
      }
      const i = this.#waiters.findIndex((w) => w.method === msg.method);
      if (i >= 0) this.#waiters.splice(i, 1)[0].resolve(msg.params);
    };
  }

  static connect(url: string): Promise<Cdp> {
    const ws = new WebSocket(url);
    return new Promise((resolve, reject) => {
      ws.onopen = () => resolve(new Cdp(ws));
      ws.onerror = () => reject(new Error(`cannot connect to ${url}`));
    });
  }

  send(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = ++this.#id;
    return new Promise((resolve, reject) => {
      this.#calls.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  next(method: string): Promise<unknown> {
    return new Promise((resolve) => this.#waiters.push({ method, resolve }));
  }

  close(): void {
    this.ws.close();
  }
}
