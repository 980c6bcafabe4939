/**
 * Splits a byte stream into UTF-8 lines (without the newline) and hands each to `onLine`; a last
 * line without a newline is dropped. Resolves when the stream ends; a stream that errors (its
 * process went away) ends it too. Imports nothing: the sandbox runner uses it as well.
 */
export async function forEachLine(
  chunks: AsyncIterable<Uint8Array>,
  onLine: (line: string) => void,
): Promise<void> {
  const decoder = new TextDecoder();
  let buffered = "";
  try {
    for await (const chunk of chunks) {
      buffered += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        onLine(line);
      }
    }
  } catch { /* the other side went away */ }
}
