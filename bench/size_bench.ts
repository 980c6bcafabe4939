/**
 * Size of the published form of `@casys/pml` (what `deno task size` prints), as a figure of the
 * summary table.
 *
 *   deno task bench size
 */
import { publishedSize } from "../packages/pml/scripts/size.ts";
import { figure } from "./_stats.ts";

const size = await publishedSize();
const kib = size.gzBytes / 1024;
console.log(
  `@casys/pml published form: ${size.files} files, ${(size.rawBytes / 1024).toFixed(1)} KiB raw, ${
    kib.toFixed(1)
  } KiB gzipped`,
);
figure({
  id: "3-size",
  what: "published client package, gzipped (`deno task size`)",
  now: `${kib.toFixed(1)} KiB (${size.files} files)`,
  target: "< 50 KB",
  met: size.gzBytes < 50_000,
  bench: "size",
});
