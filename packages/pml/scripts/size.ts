/**
 * `deno task size`: the published form of `@casys/pml` (the files its `deno.json` `publish` section
 * includes, plus the std modules it ships from `registry/std/`), as a gzipped tarball.
 */
import { join, relative } from "node:path";

const pkg = join(import.meta.dirname!, "..");
const root = join(pkg, "..", "..");

/** Size of the published form: file count, raw bytes, gzipped tarball bytes. */
export interface PublishedSize {
  readonly files: number;
  readonly rawBytes: number;
  readonly gzBytes: number;
}

function globRe(glob: string): RegExp {
  const re = glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*\*\//g, "(.*/)?").replace(
    /\*/g,
    "[^/]*",
  );
  return new RegExp(`^${re}$`);
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) out.push(...walk(p));
    else if (e.isFile) out.push(p);
  }
  return out;
}

/** Measures the published form as `tar -czf` of its files (paths relative to the repository). */
export async function publishedSize(): Promise<PublishedSize> {
  const config = JSON.parse(Deno.readTextFileSync(join(pkg, "deno.json")));
  const inc = (config.publish.include as string[]).map(globRe);
  const exc = ((config.publish.exclude ?? []) as string[]).map(globRe);
  const files = walk(pkg)
    .map((p) => relative(pkg, p))
    .filter((p) => inc.some((r) => r.test(p)) && !exc.some((r) => r.test(p)))
    .filter((p) => !p.startsWith("src/testing/") && !p.includes("/testdata/"))
    .map((p) => join(pkg, p));
  const std = walk(join(root, "registry", "std")).filter((p) => p.endsWith(".ts"));
  const all = [...files, ...std].map((p) => relative(root, p)).sort();
  const rawBytes = all.reduce((n, p) => n + Deno.statSync(join(root, p)).size, 0);
  const tar = await new Deno.Command("tar", {
    args: ["-czf", "-", ...all],
    cwd: root,
    stdout: "piped",
  }).output();
  return { files: all.length, rawBytes, gzBytes: tar.stdout.length };
}

if (import.meta.main) {
  const size = await publishedSize();
  console.log(
    `@casys/pml published form: ${size.files} files, ${
      (size.rawBytes / 1024).toFixed(1)
    } KiB raw, ${(size.gzBytes / 1024).toFixed(1)} KiB gzipped (seed story 14.1 target: < 50 KB)`,
  );
}
