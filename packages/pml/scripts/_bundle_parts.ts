/**
 * What a bundle is made of: the bytes of a minified bundle owned by each source file, read from its
 * source map (`deno bundle --sourcemap=external`), grouped by folder, with the gzip bytes each
 * group adds (the bundle gzipped whole, against the bundle gzipped without that group's bytes).
 * `deno task size --parts` prints it for `pml.js`.
 */
import { gzipSync } from "node:zlib";

/** A source map, as far as this module reads it (version 3). */
export interface SourceMap {
  readonly sources: readonly string[];
  readonly mappings: string;
}

/** One group of sources and what it weighs in the bundle. */
export interface BundlePart {
  /** The group's name: a folder (or a file) of the sources, relative to the map's `sourceRoot`. */
  readonly name: string;
  /** Bytes of the bundle generated from the group's sources. */
  readonly bytes: number;
  /** Gzip bytes the group adds: the bundle gzipped, less the bundle without its bytes gzipped. */
  readonly gzBytes: number;
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/**
 * The index of the source each character of `code` was generated from (-1: none, such as the
 * bundler's own helpers), from the map's `mappings`: a segment owns the characters up to the next
 * segment of its line, or to the line's end.
 *
 * @example
 * ```ts
 * sourceOwners("abcdef", { sources: ["a.ts", "b.ts"], mappings: "AAAA,GCAA" });
 * // Int32Array [0, 0, 0, 1, 1, 1]
 * ```
 */
export function sourceOwners(code: string, map: SourceMap): Int32Array {
  const owners = new Int32Array(code.length).fill(-1);
  const lines = map.mappings.split(";");
  let lineStart = 0;
  let source = 0;
  for (let line = 0; line < lines.length && lineStart <= code.length; line++) {
    let lineEnd = code.indexOf("\n", lineStart);
    if (lineEnd < 0) lineEnd = code.length;
    const segments = lines[line].split(",").filter((s) => s !== "").map(decodeVlq);
    let column = 0;
    const starts: [number, number][] = [];
    for (const fields of segments) {
      column += fields[0];
      if (fields.length > 1) source += fields[1];
      starts.push([column, fields.length > 1 ? source : -1]);
    }
    for (let i = 0; i < starts.length; i++) {
      const end = i + 1 < starts.length ? starts[i + 1][0] : lineEnd - lineStart;
      owners.fill(starts[i][1], lineStart + starts[i][0], lineStart + end);
    }
    lineStart = lineEnd + 1;
  }
  return owners;
}

/** The fields of one segment of a source map's `mappings` (base64 VLQ). */
function decodeVlq(segment: string): number[] {
  const fields: number[] = [];
  let value = 0;
  let shift = 0;
  for (const ch of segment) {
    const digit = BASE64.indexOf(ch);
    if (digit < 0) throw new SyntaxError(`Cannot read the source map segment "${segment}"`);
    value += (digit & 31) * 2 ** shift;
    if (digit & 32) {
      shift += 5;
    } else {
      fields.push(value % 2 ? -(value - 1) / 2 : value / 2);
      value = 0;
      shift = 0;
    }
  }
  return fields;
}

/**
 * The parts of `code` by group of sources (`groupOf` names a source's group), largest gzip share
 * first. Bytes no source owns are the group `(bundler)`.
 */
export function bundleParts(
  code: string,
  map: SourceMap,
  groupOf: (source: string) => string,
): BundlePart[] {
  const owners = sourceOwners(code, map);
  const groupIds = new Map<string, number>();
  const groupOfSource = map.sources.map((s) => {
    const name = groupOf(s);
    if (!groupIds.has(name)) groupIds.set(name, groupIds.size);
    return groupIds.get(name)!;
  });
  const bundler = groupIds.size;
  groupIds.set("(bundler)", bundler);
  const groupAt = (i: number) => owners[i] < 0 ? bundler : groupOfSource[owners[i]];
  const gz = (text: string) => gzipSync(text, { level: 9 }).length;
  const whole = gz(code);
  return [...groupIds].map(([name, id]) => {
    let bytes = 0;
    let rest = "";
    let from = 0;
    for (let i = 0; i < code.length; i++) {
      if (groupAt(i) !== id) continue;
      rest += code.slice(from, i);
      from = i + 1;
      bytes++;
    }
    rest += code.slice(from);
    return { name, bytes, gzBytes: whole - gz(rest) };
  }).filter((p) => p.bytes > 0).sort((a, b) => b.gzBytes - a.gzBytes);
}
