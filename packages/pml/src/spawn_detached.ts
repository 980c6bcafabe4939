/**
 * Starts `command args…` detached from `pml`: no stdio, not awaited, not keeping `pml` alive (a
 * browser opener or a notification daemon that never answers must not hold it). A program that is
 * not installed is no error: returns false, and the caller's other channels carry on.
 */
export function spawnDetached(command: string, args: string[]): boolean {
  try {
    const child = new Deno.Command(command, {
      args,
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    child.status.catch(() => {});
    child.unref();
    return true;
  } catch {
    return false;
  }
}
