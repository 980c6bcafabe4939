/** A Worker (its own isolate, the same process): creates a control group, says if it got one. */
import { createGroup } from "../cgroup.ts";

const group = createGroup({ tasks: 64 });
await group?.remove();
(self as unknown as { postMessage(message: boolean): void }).postMessage(group !== undefined);
