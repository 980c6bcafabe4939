/**
 * PML std module `filesystem`: workspace-scoped file tools.
 *
 * Module contract (DESIGN §7): one async function per action, called as `fn(args, ctx)`, and a
 * `__meta__` object with descriptions and input schemas. This module imports nothing: it runs in a
 * sandbox subprocess whose Deno flags grant read (and, for write tools, write) access to the
 * workspace only. The gateway has already resolved every path argument to an absolute real path
 * inside the workspace before the call reaches this module; the sandbox flags are the second wall.
 */

/** `signal` aborts when the client cancels the call (`notifications/cancelled`). */
type Ctx = { workspace: string; signal?: AbortSignal };
type Args = Record<string, unknown>;

const MAX_TREE_ENTRIES = 10_000;
const MAX_SEARCH_RESULTS = 1_000;

function str(args: Args, name: string): string {
  const value = args[name];
  if (typeof value !== "string" || value === "") {
    throw new TypeError(`Argument "${name}" must be a non-empty string`);
  }
  return value;
}

function rel(ctx: Ctx, path: string): string {
  if (path === ctx.workspace) return ".";
  return path.startsWith(ctx.workspace + "/") ? path.slice(ctx.workspace.length + 1) : path;
}

/** Reads a UTF-8 text file, optionally only its first or last N lines. */
export async function read_file(args: Args): Promise<string> {
  const text = await Deno.readTextFile(str(args, "path"));
  const head = typeof args.head === "number" ? args.head : undefined;
  const tail = typeof args.tail === "number" ? args.tail : undefined;
  if (head !== undefined && tail !== undefined) {
    throw new TypeError(`Arguments "head" and "tail" cannot be used together`);
  }
  if (head !== undefined) return text.split("\n").slice(0, head).join("\n");
  if (tail !== undefined) return text.split("\n").slice(-tail).join("\n");
  return text;
}

/** Creates or overwrites a file with the given content. */
export async function write_file(args: Args): Promise<string> {
  const path = str(args, "path");
  const content = args.content;
  if (typeof content !== "string") throw new TypeError(`Argument "content" must be a string`);
  await Deno.writeTextFile(path, content);
  return `Wrote ${new TextEncoder().encode(content).length} bytes to ${path}`;
}

type Edit = { oldText: string; newText: string };

/** Applies exact-text replacements to a file and returns a line diff of the change. */
export async function edit_file(args: Args): Promise<string> {
  const path = str(args, "path");
  const edits = args.edits;
  if (!Array.isArray(edits) || edits.length === 0) {
    throw new TypeError(`Argument "edits" must be a non-empty array of {oldText, newText}`);
  }
  const before = await Deno.readTextFile(path);
  let after = before;
  for (const [i, edit] of (edits as Edit[]).entries()) {
    if (typeof edit?.oldText !== "string" || typeof edit?.newText !== "string") {
      throw new TypeError(`edits[${i}] must be {oldText: string, newText: string}`);
    }
    const at = after.indexOf(edit.oldText);
    if (edit.oldText === "" || at < 0) {
      throw new Error(`Cannot apply edits[${i}]: text not found in "${path}"`);
    }
    after = after.slice(0, at) + edit.newText + after.slice(at + edit.oldText.length);
  }
  const diff = lineDiff(before, after);
  if (args.dryRun !== true) await Deno.writeTextFile(path, after);
  return diff;
}

function lineDiff(before: string, after: string): string {
  const a = before.split("\n");
  const b = after.split("\n");
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const lines = [`@@ -${start + 1},${endA - start} +${start + 1},${endB - start} @@`];
  for (const line of a.slice(start, endA)) lines.push(`-${line}`);
  for (const line of b.slice(start, endB)) lines.push(`+${line}`);
  return lines.join("\n");
}

/** Lists a directory, one entry per line, prefixed with [DIR], [FILE] or [LINK]. */
export async function list_directory(args: Args): Promise<string> {
  const entries: string[] = [];
  for await (const e of Deno.readDir(str(args, "path"))) {
    const kind = e.isDirectory ? "[DIR]" : e.isSymlink ? "[LINK]" : "[FILE]";
    entries.push(`${kind} ${e.name}`);
  }
  return entries.sort((x, y) => x.slice(x.indexOf(" ")).localeCompare(y.slice(y.indexOf(" "))))
    .join("\n");
}

type TreeNode = { name: string; type: "file" | "directory" | "symlink"; children?: TreeNode[] };

/** A recursive JSON tree of a directory. Symbolic links are listed, never followed. */
export async function directory_tree(args: Args): Promise<TreeNode[]> {
  let budget = MAX_TREE_ENTRIES;
  async function walk(dir: string): Promise<TreeNode[]> {
    const nodes: TreeNode[] = [];
    for await (const e of Deno.readDir(dir)) {
      if (--budget < 0) throw new Error(`Directory tree has more than ${MAX_TREE_ENTRIES} entries`);
      if (e.isDirectory) {
        nodes.push({ name: e.name, type: "directory", children: await walk(`${dir}/${e.name}`) });
      } else {
        nodes.push({ name: e.name, type: e.isSymlink ? "symlink" : "file" });
      }
    }
    return nodes.sort((x, y) => x.name.localeCompare(y.name));
  }
  return await walk(str(args, "path"));
}

function globToRegExp(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*") {
      if (glob[i + 1] === "*") {
        re += ".*";
        i++;
        if (glob[i + 1] === "/") i++;
      } else re += "[^/]*";
    } else if (c === "?") re += "[^/]";
    else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`, "i");
}

/**
 * Finds files and directories below `path` whose name (or relative path, for patterns with a
 * slash) matches `pattern` (a glob, or a plain case-insensitive substring). Links are not followed.
 * A walk the client cancels stops at the next directory with an `AbortError`.
 */
export async function search_files(args: Args, ctx: Ctx): Promise<string> {
  const root = str(args, "path");
  const pattern = str(args, "pattern");
  const excludes = Array.isArray(args.excludePatterns)
    ? (args.excludePatterns as string[]).map(globToRegExp)
    : [];
  const isGlob = /[*?]/.test(pattern);
  const matcher = isGlob ? globToRegExp(pattern) : undefined;
  const needle = pattern.toLowerCase();
  const results: string[] = [];
  const signal = ctx.signal;
  async function walk(dir: string, relDir: string): Promise<void> {
    if (signal?.aborted) {
      throw new DOMException(
        `Search of ${JSON.stringify(root)} was cancelled by the client`,
        "AbortError",
      );
    }
    for await (const e of Deno.readDir(dir)) {
      if (results.length >= MAX_SEARCH_RESULTS) return;
      const relPath = relDir ? `${relDir}/${e.name}` : e.name;
      if (excludes.some((x) => x.test(relPath) || x.test(e.name))) continue;
      const subject = pattern.includes("/") ? relPath : e.name;
      const hit = matcher ? matcher.test(subject) : subject.toLowerCase().includes(needle);
      if (hit) results.push(rel(ctx, `${dir}/${e.name}`));
      if (e.isDirectory) await walk(`${dir}/${e.name}`, relPath);
    }
  }
  await walk(root, "");
  return results.length ? results.sort().join("\n") : "No matches found";
}

/** Size, type, times and permissions of a file or directory (links are described, not followed). */
export async function get_file_info(args: Args): Promise<Record<string, unknown>> {
  const info = await Deno.lstat(str(args, "path"));
  return {
    size: info.size,
    type: info.isDirectory ? "directory" : info.isSymlink ? "symlink" : "file",
    created: info.birthtime?.toISOString() ?? null,
    modified: info.mtime?.toISOString() ?? null,
    accessed: info.atime?.toISOString() ?? null,
    permissions: info.mode === null ? null : (info.mode & 0o777).toString(8),
  };
}

/** Creates a directory and any missing parents; succeeds if it already exists. */
export async function create_directory(args: Args): Promise<string> {
  const path = str(args, "path");
  await Deno.mkdir(path, { recursive: true });
  return `Created directory ${path}`;
}

/** Moves or renames a file or directory; refuses to overwrite an existing destination. */
export async function move_file(args: Args): Promise<string> {
  const source = str(args, "source");
  const destination = str(args, "destination");
  try {
    await Deno.lstat(destination);
    throw new Error(`Cannot move to "${destination}": destination already exists`);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  await Deno.rename(source, destination);
  return `Moved ${source} to ${destination}`;
}

const pathProp = { type: "string", description: "Path relative to the workspace (or absolute)" };

/** Tool descriptions and input schemas. `paths` names the arguments the gateway must confine. */
export const __meta__ = {
  namespace: "filesystem",
  description: "Read, write and search files inside the workspace",
  tools: {
    read_file: {
      description: "Read a UTF-8 text file in the workspace (optionally only its head or tail)",
      inputSchema: {
        type: "object",
        properties: {
          path: pathProp,
          head: { type: "number", description: "Only the first N lines" },
          tail: { type: "number", description: "Only the last N lines" },
        },
        required: ["path"],
      },
      paths: ["path"],
      access: "read",
    },
    write_file: {
      description: "Create or overwrite a file in the workspace",
      inputSchema: {
        type: "object",
        properties: { path: pathProp, content: { type: "string" } },
        required: ["path", "content"],
      },
      paths: ["path"],
      access: "write",
    },
    edit_file: {
      description: "Replace exact text in a file; returns a line diff (dryRun: only the diff)",
      inputSchema: {
        type: "object",
        properties: {
          path: pathProp,
          edits: {
            type: "array",
            items: {
              type: "object",
              properties: { oldText: { type: "string" }, newText: { type: "string" } },
              required: ["oldText", "newText"],
            },
          },
          dryRun: { type: "boolean" },
        },
        required: ["path", "edits"],
      },
      paths: ["path"],
      access: "write",
    },
    list_directory: {
      description: "List the entries of a directory in the workspace",
      inputSchema: { type: "object", properties: { path: pathProp }, required: ["path"] },
      paths: ["path"],
      access: "read",
    },
    directory_tree: {
      description: "Recursive JSON tree of a directory (links are not followed)",
      inputSchema: { type: "object", properties: { path: pathProp }, required: ["path"] },
      paths: ["path"],
      access: "read",
    },
    search_files: {
      description: "Find files whose name matches a glob or substring below a directory",
      inputSchema: {
        type: "object",
        properties: {
          path: pathProp,
          pattern: { type: "string" },
          excludePatterns: { type: "array", items: { type: "string" } },
        },
        required: ["path", "pattern"],
      },
      paths: ["path"],
      access: "read",
    },
    get_file_info: {
      description: "Size, type, times and permissions of a file or directory",
      inputSchema: { type: "object", properties: { path: pathProp }, required: ["path"] },
      paths: ["path"],
      access: "read",
    },
    create_directory: {
      description: "Create a directory (and missing parents) in the workspace",
      inputSchema: { type: "object", properties: { path: pathProp }, required: ["path"] },
      paths: ["path"],
      access: "write",
    },
    move_file: {
      description: "Move or rename a file or directory inside the workspace",
      inputSchema: {
        type: "object",
        properties: { source: pathProp, destination: pathProp },
        required: ["source", "destination"],
      },
      paths: ["source", "destination"],
      access: "write",
    },
  },
} as const;
