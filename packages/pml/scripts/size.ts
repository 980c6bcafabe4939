/**
 * `deno task size`: the published form of `@casys/pml`, measured as `npm pack` makes it
 * (`scripts/pack.ts`: the bundle, the catalogue of stdio MCPs, the launcher, package.json).
 */
import { pack } from "./pack.ts";

/** Size of the published form: file count, unpacked bytes, tarball (gzipped) bytes. */
export interface PublishedSize {
  readonly files: number;
  readonly rawBytes: number;
  readonly gzBytes: number;
}

/** Packs `@casys/pml` into a temporary folder and measures the tarball. */
export async function publishedSize(): Promise<PublishedSize> {
  const out = Deno.makeTempDirSync({ prefix: "pml-size-" });
  try {
    const packed = await pack(out);
    return { files: packed.files.length, rawBytes: packed.unpackedSize, gzBytes: packed.size };
  } finally {
    Deno.removeSync(out, { recursive: true });
  }
}

if (import.meta.main) {
  const size = await publishedSize();
  console.log(
    `@casys/pml (npm pack): ${size.files} files, ${
      (size.rawBytes / 1024).toFixed(1)
    } KiB unpacked, ${
      (size.gzBytes / 1024).toFixed(1)
    } KiB packed (seed story 14.1 target: < 50 KB)`,
  );
}
