/** Runs `run` with a signal that SIGINT or SIGTERM aborts (long-running commands stop cleanly). */
export async function withStopSignal<T>(run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  const signals = ["SIGINT", "SIGTERM"] as const;
  for (const s of signals) Deno.addSignalListener(s, onSignal);
  try {
    return await run(stop.signal);
  } finally {
    for (const s of signals) Deno.removeSignalListener(s, onSignal);
  }
}
