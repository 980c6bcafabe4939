/**
 * `deno task size`: the published form of `@casys/pml`, measured as `npm pack` makes it
 * (`scripts/pack.ts`: the bundle, the catalogue of stdio MCPs, the launcher, package.json).
 *
 * `deno task size --parts`: what the bundle's `pml.js` is made of, by folder of the sources: its
 * bytes in the minified bundle and the gzip bytes each folder adds (`scripts/_bundle_parts.ts`).
 */
import { dirname, join, relative, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { bundle } from "./bundle.ts";
import { type BundlePart, bundleParts } from "./_bundle_parts.ts";
import { pack } from "./pack.ts";

const PKG = resolve(import.meta.dirname!, "..");

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

/**
 * The parts of the bundle's `pml.js`, by folder: `src/<folder>` for the client's sources (`src`
 * for the files directly in it), the folder of any other file relative to the repository
 * (`registry/std`). Also its size, minified and gzipped whole.
 */
export async function bundledParts(): Promise<
  { bytes: number; gzBytes: number; parts: BundlePart[] }
> {
  const out = Deno.makeTempDirSync({ dir: PKG, prefix: ".bundle-parts-" });
  try {
    await bundle(out, { sourcemap: true });
    const code = Deno.readTextFileSync(join(out, "pml.js"));
    const map = JSON.parse(Deno.readTextFileSync(join(out, "pml.js.map")));
    const parts = bundleParts(code, map, (source) => {
      const path = relative(PKG, resolve(out, source));
      const [top, folder, ...rest] = path.split("/");
      if (top === "src") return rest.length > 0 ? `src/${folder}` : "src";
      return path.startsWith("..")
        ? dirname(relative(join(PKG, "..", ".."), resolve(out, source)))
        : path;
    });
    const whole = parts.reduce((sum, p) => sum + p.bytes, 0);
    return { bytes: whole, gzBytes: gzipSync(code, { level: 9 }).length, parts };
  } finally {
    Deno.removeSync(out, { recursive: true });
  }
}

if (import.meta.main) {
  if (Deno.args.includes("--parts")) {
    const { bytes, gzBytes, parts } = await bundledParts();
    console.log(
      `pml.js: ${(bytes / 1024).toFixed(1)} KiB minified, ${
        (gzBytes / 1024).toFixed(1)
      } KiB gzipped (level 9); by folder, bytes minified and the gzip bytes each adds:`,
    );
    for (const p of parts) {
      console.log(`${String(p.bytes).padStart(8)} ${String(p.gzBytes).padStart(7)}  ${p.name}`);
    }
  } else {
    const size = await publishedSize();
    console.log(
      `@casys/pml (npm pack): ${size.files} files, ${
        (size.rawBytes / 1024).toFixed(1)
      } KiB unpacked, ${
        (size.gzBytes / 1024).toFixed(1)
      } KiB packed (seed story 14.1 target: < 50 KB)`,
    );
  }
}
