/**
 * The hub of fronted servers' notifications (docs/surface.md): a bound per server on an injected
 * clock, the client's log level given to the sessions open and to those opened later, a client
 * gone left out.
 */
import { assertEquals } from "../../testing/assert.ts";
import type { LoggingLevel, ServerNotification } from "../../sdk/types.ts";
import { UpstreamHub } from "./upstream_hub.ts";

const log = (data: string): ServerNotification => ({
  method: "notifications/message",
  params: { level: "info", data },
});

Deno.test("hub: each server's notifications within its bucket, refilled with time; one server's flood leaves another's alone", () => {
  let now = 0;
  const warned: string[] = [];
  const hub = new UpstreamHub({
    workspace: "/w",
    bound: { burst: 3, perSecond: 2 },
    now: () => now,
    warn: (line) => warned.push(line),
  });
  const got: string[] = [];
  hub.attach((n) => {
    got.push(String((n.params as { data: string }).data));
    return Promise.resolve();
  });
  for (let i = 0; i < 10; i++) hub.broadcast("a", log(`a${i}`));
  hub.broadcast("b", log("b0"));
  assertEquals(got, ["a0", "a1", "a2", "b0"]);
  now = 1000; // two more tokens for "a"
  for (let i = 10; i < 14; i++) hub.broadcast("a", log(`a${i}`));
  assertEquals(got.slice(4), ["a10", "a11"]);
  assertEquals(warned.length, 1, "the drop is said once the server may send again");
});

Deno.test("hub: the client's log level reaches the sessions open and each one opened later, not a closed one", async () => {
  const hub = new UpstreamHub({ workspace: "/w" });
  const levels: [string, LoggingLevel][] = [];
  const sink = (name: string, logs = true) => ({
    logs,
    setLoggingLevel: (level: LoggingLevel) => {
      levels.push([name, level]);
      return Promise.resolve();
    },
  });
  const closeA = hub.open(sink("a"));
  hub.open(sink("quiet", false));
  await hub.setLoggingLevel("debug");
  assertEquals(levels, [["a", "debug"]]);
  closeA();
  hub.open(sink("b"));
  await hub.setLoggingLevel("error");
  assertEquals(levels, [["a", "debug"], ["b", "debug"], ["b", "error"]]);
});

Deno.test("hub: a client whose send fails is left out; the others still get every notification", async () => {
  const hub = new UpstreamHub({ workspace: "/w" });
  let good = 0;
  let bad = 0;
  hub.attach(() => {
    bad++;
    return Promise.reject(new Error("gone"));
  });
  hub.attach(() => {
    good++;
    return Promise.resolve();
  });
  hub.broadcast("a", log("1"));
  await new Promise((r) => setTimeout(r, 0));
  hub.broadcast("a", log("2"));
  assertEquals([bad, good], [1, 2]);
});
