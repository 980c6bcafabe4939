/**
 * A reader of Seatbelt profiles (SBPL) for tests, to ask what a profile allows without a Mac: the
 * s-expressions are parsed into rules (`allow` or `deny`, operations, filters), and an operation
 * on a path or a remote address is decided by the last rule whose operation and filters match it
 * (a rule on `file-read*` covers `file-read-data`; `default` covers everything), as Seatbelt does.
 * It knows the filters that file and network rules use (`subpath`, `literal`, `regex`,
 * `vnode-type`, `require-all`/`-any`/`-not`, `remote tcp|ip|unix-socket`, `sysctl-name`,
 * `sysctl-name-prefix`); any other filter met on
 * a rule that applies is an error rather than a guess.
 *
 * @module
 */

/** An s-expression: a symbol, a string (`"…"`), a regex string (`#"…"`) or a list. */
export type Sexp = string | { readonly str: string } | { readonly regex: string } | Sexp[];

/** One rule of a profile. */
export interface SbplRule {
  readonly action: "allow" | "deny";
  readonly operations: readonly string[];
  /** Any of them matches (none: every object of the operations). */
  readonly filters: readonly Sexp[];
}

/** Parses SBPL text into its top-level expressions. */
export function parseSbpl(text: string): Sexp[] {
  let i = 0;
  const read = (): Sexp => {
    skip();
    const c = text[i];
    if (c === "(") {
      i++;
      const list: Sexp[] = [];
      for (skip(); text[i] !== ")"; skip()) {
        if (i >= text.length) throw new SyntaxError("Unclosed list in the profile");
        list.push(read());
      }
      i++;
      return list;
    }
    if (c === '"') return { str: quoted() };
    if (c === "#" && text[i + 1] === '"') {
      i++;
      return { regex: quoted() };
    }
    const start = i;
    while (i < text.length && !/[\s()";]/.test(text[i])) i++;
    if (start === i) throw new SyntaxError(`Unexpected "${c}" at ${i} in the profile`);
    return text.slice(start, i);
  };
  const quoted = (): string => {
    let out = "";
    for (i++; text[i] !== '"'; i++) {
      if (i >= text.length) throw new SyntaxError("Unclosed string in the profile");
      if (text[i] === "\\") i++;
      out += text[i];
    }
    i++;
    return out;
  };
  const skip = () => {
    for (;;) {
      while (/\s/.test(text[i] ?? "")) i++;
      if (text[i] !== ";") return;
      while (i < text.length && text[i] !== "\n") i++;
    }
  };
  const out: Sexp[] = [];
  for (skip(); i < text.length; skip()) out.push(read());
  return out;
}

/**
 * The rules of a profile, in order (`version` and modifiers such as `with message` left out), its
 * `(param "NAME")` replaced by `params` (as `sandbox-exec -D NAME=value`) and `string-append` done.
 */
export function sbplRules(text: string, params: Readonly<Record<string, string>> = {}): SbplRule[] {
  const rules: SbplRule[] = [];
  for (const parsed of parseSbpl(text)) {
    const exp = evaluated(parsed, params);
    if (!Array.isArray(exp) || (exp[0] !== "allow" && exp[0] !== "deny")) continue;
    const operations = exp.slice(1).filter((x): x is string => typeof x === "string");
    const filters = exp.slice(1).filter((x) => Array.isArray(x) && x[0] !== "with");
    rules.push({ action: exp[0], operations, filters });
  }
  return rules;
}

/** An operation to decide. */
export type SbplProbe =
  | {
    /** `file-read-data`, `file-write-create`, `process-exec`, … */
    readonly op: string;
    readonly path: string;
    /** `REGULAR-FILE` unless given. */
    readonly vnode?: "REGULAR-FILE" | "DIRECTORY" | "CHARACTER-DEVICE";
  }
  | {
    readonly op: "network-outbound";
    readonly remote: {
      readonly proto: "tcp" | "udp";
      readonly host: string;
      readonly port: number;
    };
  }
  | { readonly op: "network-outbound"; readonly unixSocket: string }
  | { readonly op: "sysctl-read"; readonly sysctl: string };

/** Whether `rules` allow `probe` (the last rule that matches decides; none: allowed). */
export function sbplAllows(rules: readonly SbplRule[], probe: SbplProbe): boolean {
  for (let i = rules.length - 1; i >= 0; i--) {
    const rule = rules[i];
    if (!rule.operations.some((op) => coversOperation(op, probe.op))) continue;
    if (rule.filters.length === 0 || rule.filters.some((f) => matches(f, probe))) {
      return rule.action === "allow";
    }
  }
  return true;
}

/** `exp` with its `param` and `string-append` forms computed. */
function evaluated(exp: Sexp, params: Readonly<Record<string, string>>): Sexp {
  if (!Array.isArray(exp)) return exp;
  const [head, ...args] = exp.map((x) => evaluated(x, params));
  if (head === "param") {
    const name = text(args[0]);
    if (!(name in params)) throw new TypeError(`The profile's parameter "${name}" is not given`);
    return { str: params[name] };
  }
  if (head === "string-append") return { str: args.map(text).join("") };
  return [head, ...args];
}

function coversOperation(ruleOp: string, op: string): boolean {
  if (ruleOp === "default" || ruleOp === op) return true;
  return ruleOp.endsWith("*") && op.startsWith(ruleOp.slice(0, -1));
}

const text = (x: Sexp | undefined): string => {
  if (x && typeof x === "object" && !Array.isArray(x)) return "str" in x ? x.str : x.regex;
  throw new TypeError(`Expected a string in the profile, got ${JSON.stringify(x)}`);
};

const LOOPBACK = new Set(["localhost", "127.0.0.1", "::1"]);

function matches(filter: Sexp, probe: SbplProbe): boolean {
  if (!Array.isArray(filter)) throw new TypeError(`Not a filter: ${JSON.stringify(filter)}`);
  const [head, ...args] = filter;
  switch (head) {
    case "require-all":
      return args.every((f) => matches(f, probe));
    case "require-any":
      return args.some((f) => matches(f, probe));
    case "require-not":
      return !matches(args[0], probe);
  }
  if ("path" in probe) {
    const path = probe.path;
    switch (head) {
      case "subpath": {
        const root = text(args[0]);
        return root === "/" || path === root || path.startsWith(root.replace(/\/$/, "") + "/");
      }
      case "literal":
        return path === text(args[0]);
      case "regex":
        return new RegExp(text(args[0])).test(path);
      case "vnode-type":
        return (probe.vnode ?? "REGULAR-FILE") === args[0];
    }
  }
  if ("sysctl" in probe) {
    if (head === "sysctl-name") return probe.sysctl === text(args[0]);
    if (head === "sysctl-name-prefix") return probe.sysctl.startsWith(text(args[0]));
  }
  if ("unixSocket" in probe) {
    if (head === "literal") return probe.unixSocket === text(args[0]);
    if (head === "remote" && args[0] === "unix-socket") {
      return matches(args[1], { op: probe.op, path: probe.unixSocket });
    }
    if (head === "remote") return false;
  }
  if ("remote" in probe) {
    if (head === "literal" || head === "subpath" || head === "regex") return false;
    if (head === "remote" && args[0] === "unix-socket") return false;
    if (head === "remote" && (args[0] === "tcp" || args[0] === "ip" || args[0] === "udp")) {
      if (args[0] !== "ip" && args[0] !== probe.remote.proto) return false;
      const spec = text(args[1]);
      const at = spec.lastIndexOf(":");
      const [host, port] = [spec.slice(0, at), spec.slice(at + 1)];
      const hostOk = host === "*" ||
        (host === "localhost" ? LOOPBACK.has(probe.remote.host) : host === probe.remote.host);
      return hostOk && (port === "*" || Number(port) === probe.remote.port);
    }
  }
  throw new TypeError(`Filter not known to this reader: ${JSON.stringify(filter)}`);
}
