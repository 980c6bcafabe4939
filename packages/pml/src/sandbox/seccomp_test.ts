import { assert, assertEquals } from "../testing/assert.ts";
import { unixSocketFilter } from "./seccomp.ts";

/** Runs the classic BPF program over one `seccomp_data` (the subset of BPF the filter uses). */
function run(program: Uint8Array, data: { nr: number; arch: number; arg0: number }): number {
  const view = new DataView(program.buffer);
  const mem = new DataView(new ArrayBuffer(64));
  mem.setUint32(0, data.nr, true);
  mem.setUint32(4, data.arch, true);
  mem.setUint32(16, data.arg0, true);
  let acc = 0;
  for (let pc = 0; pc < program.length / 8;) {
    const code = view.getUint16(pc * 8, true);
    const jt = view.getUint8(pc * 8 + 2);
    const jf = view.getUint8(pc * 8 + 3);
    const k = view.getUint32(pc * 8 + 4, true);
    if (code === 0x20) (acc = mem.getUint32(k, true), pc++);
    else if (code === 0x15) pc += 1 + (acc === k ? jt : jf);
    else if (code === 0x35) pc += 1 + (acc >= k ? jt : jf);
    else if (code === 0x06) return k;
    else throw new Error(`opcode ${code}`);
  }
  throw new Error("fell off the program");
}

const ALLOW = 0x7fff0000;
const EPERM = 0x00050001;
const KILL = 0x80000000;

Deno.test("seccomp: socket(AF_UNIX) is refused, other sockets and syscalls pass, other ABIs die", () => {
  const x86 = unixSocketFilter("x86_64")!;
  const arch = 0xc000003e;
  assertEquals(run(x86, { nr: 41, arch, arg0: 1 }), EPERM, "socket(AF_UNIX)");
  assertEquals(run(x86, { nr: 41, arch, arg0: 2 }), ALLOW, "socket(AF_INET)");
  assertEquals(run(x86, { nr: 53, arch, arg0: 1 }), ALLOW, "socketpair(AF_UNIX)");
  assertEquals(run(x86, { nr: 0, arch, arg0: 1 }), ALLOW, "read");
  assertEquals(run(x86, { nr: 41 | 0x40000000, arch, arg0: 1 }), EPERM, "x32 socket");
  assertEquals(run(x86, { nr: 102, arch: 0x40000003, arg0: 1 }), KILL, "i386 socketcall");
  const arm = unixSocketFilter("aarch64")!;
  assertEquals(run(arm, { nr: 198, arch: 0xc00000b7, arg0: 1 }), EPERM);
  assertEquals(run(arm, { nr: 198, arch: 0xc00000b7, arg0: 10 }), ALLOW);
  assert(unixSocketFilter("riscv64") === undefined);
});
