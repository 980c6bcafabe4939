/** A module for the cancellation tests: `wait` ends only when its call is cancelled. */
import { serveModules } from "../_runner.ts";

const waits = {
  wait: (_args: unknown, ctx: { signal: AbortSignal }) =>
    new Promise((resolve) => {
      ctx.signal.addEventListener("abort", () => resolve(`stopped: ${ctx.signal.reason}`));
    }),
  echo: (args: { text: string }) => args.text,
};

await serveModules({ waits });
