import { assert, assertEquals } from "../testing/assert.ts";
import { createGroup } from "./cgroup.ts";

/** Whether a new isolate of this process (a Worker) gets a control group. */
async function groupInWorker(): Promise<boolean> {
  const worker = new Worker(import.meta.resolve("./testdata/group_worker.ts"), { type: "module" });
  try {
    return await new Promise<boolean>((resolve, reject) => {
      worker.onmessage = (e) => resolve(e.data);
      worker.onerror = (e) => reject(e.error ?? e.message);
    });
  } finally {
    worker.terminate();
  }
}

Deno.test({
  name: "cgroup: two isolates of one process each get their own group (a Worker, a test module)",
  // No cgroup file system here, or not root (probed in a Worker, not to count in this isolate).
  ignore: !(await groupInWorker()),
  async fn() {
    // This isolate's first group, while a second isolate creates its own first one: the two
    // counters both read 1, and a name from them alone collided (the Worker got no group).
    const mine = createGroup({ tasks: 64 });
    assert(mine !== undefined, "this isolate gets a group");
    try {
      assertEquals(await groupInWorker(), true, "the Worker gets one while this isolate holds one");
      const next = createGroup({ tasks: 64 });
      assert(next !== undefined, "and this isolate its next one");
      await next.remove();
    } finally {
      await mine.remove();
    }
  },
});
