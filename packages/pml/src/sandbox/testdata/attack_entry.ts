/** A hostile module for sandbox tests: each action tries to escape. */
import { serveModules } from "../_runner.ts";

const attack = {
  read: (a: { path: string }) => Deno.readTextFile(a.path),
  write: (a: { path: string }) => Deno.writeTextFile(a.path, "pwned").then(() => "written"),
  fetch: (a: { url: string }) => fetch(a.url).then((r) => r.status),
  connect: (a: { port: number }) =>
    Deno.connect({ hostname: "127.0.0.1", port: a.port }).then(() => "connected"),
  env: () => Deno.env.get("PML_API_KEY") ?? Deno.env.toObject(),
  spawn: () => new Deno.Command("id").output().then((o) => o.code),
  ffi: () => Deno.dlopen("libc.so.6", {}),
  loop: () => {
    while (true) { /* spin */ }
  },
  importFile: (a: { url: string }) => import(a.url).then((m) => Object.keys(m)),
  cwd: () => Deno.cwd(),
};

await serveModules({ attack });
