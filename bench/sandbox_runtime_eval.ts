/**
 * Evaluation of `@anthropic-ai/sandbox-runtime` (pinned devDependency) as PML's OS layer
 * (issue 28): PML's attack ideas run through it under Deno, with its start-up and per-command
 * latency. Linux only (bubblewrap, socat, ripgrep). Prints one line per attempt, `HELD` or
 * `OPEN`, and the medians; docs/security.md ("sandbox-runtime as the OS layer") quotes a run.
 *
 * ```sh
 * ./node_modules/.bin/deno run --allow-all bench/sandbox_runtime_eval.ts
 * ```
 *
 * @module
 */
import { SandboxManager } from "@anthropic-ai/sandbox-runtime";
import { median } from "./_stats.ts";

const decoder = new TextDecoder();

/** Runs `command` wrapped by sandbox-runtime; its output and how long wrap and run took. */
async function wrapped(command: string, cwd: string) {
  const t0 = performance.now();
  const shellCommand = await SandboxManager.wrapWithSandbox(command);
  const t1 = performance.now();
  const out = await new Deno.Command("/bin/bash", {
    args: ["-c", shellCommand],
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const t2 = performance.now();
  return {
    text: decoder.decode(out.stdout) + decoder.decode(out.stderr),
    code: out.code,
    wrapMs: t1 - t0,
    runMs: t2 - t1,
  };
}

/** Two loopback servers: A (allowed by name and port in the allow list) and B. */
function servers() {
  const serve = (body: string) =>
    Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => new Response(body));
  return { a: serve("A_ANSWER"), b: serve("B_SECRET") };
}

// A home of its own (the user's is left alone) holding a key where keys are kept.
const home = Deno.makeTempDirSync({ prefix: "srt-eval-home-" });
const ws = Deno.makeTempDirSync({ prefix: "srt-eval-" });
Deno.mkdirSync(`${ws}/.git/hooks`, { recursive: true });
const secret = `${home}/.ssh/pml_srt_eval_key`;
Deno.mkdirSync(`${home}/.ssh`, { recursive: true });
Deno.writeTextFileSync(secret, "SSH_PRIVATE_KEY_EVAL");
const { a, b } = servers();

// Its mandatory deny list (`.git/hooks`, shell rc files, …) is found under the current folder.
Deno.chdir(ws);
const t0 = performance.now();
await SandboxManager.initialize({
  network: { allowedDomains: [`127.0.0.1:${a.addr.port}`], deniedDomains: [] },
  filesystem: {
    denyRead: [`${home}/.ssh`, "/etc/shadow"],
    allowWrite: [ws],
    denyWrite: [],
  },
});
const initMs = performance.now() - t0;

/** Each attempt, and what counts as held (the attacker got nothing). */
type Attempt = { name: string; command: string; held: (text: string, code: number) => boolean };
const attempts: Attempt[] = [
  { name: "uid inside (root outside)", command: "id -u", held: (t) => t.trim() !== "0" },
  {
    name: "/proc/sys/kernel/core_pattern opened for writing",
    command: "exec 3>>/proc/sys/kernel/core_pattern && echo WRITABLE",
    held: (t) => !t.includes("WRITABLE"),
  },
  { name: "/etc/shadow", command: "cat /etc/shadow | head -1", held: (t) => !t.includes("root:") },
  {
    name: "a key under .ssh (denyRead)",
    command: `cat ${secret}`,
    held: (t) => !t.includes("PRIVATE"),
  },
  {
    name: ".git/hooks/pre-commit (mandatory deny)",
    command: "echo pwned > .git/hooks/pre-commit && echo WROTE",
    held: (t) => !t.includes("WROTE"),
  },
  // The workflow (reported for its answer): loopback is in its NO_PROXY, so only an explicit
  // proxy reaches it.
  {
    name: "allowed loopback port (its env: NO_PROXY=127.0.0.1)",
    command: `curl -sS -m 5 http://127.0.0.1:${a.addr.port}/`,
    held: () => true,
  },
  {
    name: "allowed loopback port, proxy named explicitly",
    command: `curl -sS -m 5 --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:${a.addr.port}/`,
    held: () => true,
  },
  {
    name: "another port of the allowed host, through its proxy",
    command: `curl -sS -m 5 --noproxy '' -x "$HTTP_PROXY" http://127.0.0.1:${b.addr.port}/`,
    held: (t) => !t.includes("B_SECRET"),
  },
  {
    name: "direct TCP around the proxy",
    command: `curl -sS -m 5 --noproxy '*' http://127.0.0.1:${b.addr.port}/`,
    held: (t) => !t.includes("B_SECRET"),
  },
  {
    name: "new unix socket (listen in the workspace)",
    command:
      "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.bind('x.sock'); print('BOUND')\"",
    held: (t) => !t.includes("BOUND"),
  },
  {
    name: "fork bomb depth 12 (processes seen at its peak)",
    command:
      "b() { if [ $1 -lt 12 ]; then b $(($1+1)) & b $(($1+1)) & wait; else sleep 3; fi; }; (b 0 &) ; sleep 2; echo PEAK=$(ls /proc | grep -c '^[0-9]'); sleep 2",
    held: (t) => Number(/PEAK=(\d+)/.exec(t)?.[1] ?? 0) < 1100,
  },
];

const runs: number[] = [];
const wraps: number[] = [];
for (const { name, command, held } of attempts) {
  const r = await wrapped(command, ws);
  runs.push(r.runMs);
  wraps.push(r.wrapMs);
  const verdict = held(r.text, r.code) ? "HELD" : "OPEN";
  const shown = /PEAK=\d+/.exec(r.text)?.[0] ?? r.text.trim().split("\n").slice(-2).join(" | ");
  console.log(`${verdict.padEnd(4)}  ${name}: ${shown.slice(0, 120)}`);
}
for (let i = 0; i < 10; i++) {
  const r = await wrapped("true", ws);
  runs.push(r.runMs);
  wraps.push(r.wrapMs);
}
console.log(
  `sandbox-runtime 0.0.83 under Deno ${Deno.version.deno}, uid ${Deno.uid()}: initialize ${
    initMs.toFixed(0)
  } ms; wrap median ${median(wraps).toFixed(1)} ms; wrap + run of \`true\` median ${
    median(runs.slice(-10)).toFixed(1)
  } ms (a process start per command: on the call path)`,
);

await SandboxManager.reset?.();
await a.shutdown();
await b.shutdown();
Deno.removeSync(home, { recursive: true });
Deno.chdir("/");
Deno.removeSync(ws, { recursive: true });
Deno.exit(0);
