/**
 * What each OS wall holds and does not, as data: `pml doctor` prints the column of the wall in
 * force (the Landlock one by the kernel's ABI); docs/security.md "What holds under each wall" is
 * the same table in words, with the attack counts beside it.
 *
 * @module
 */

/** One cell: whether it holds, and how (or what is left). */
export interface Held {
  readonly holds: boolean;
  readonly how: string;
}

/** One row: a guarantee, per wall. */
export interface WallRow {
  readonly what: string;
  readonly bubblewrap: Held;
  /** By the Landlock ABI of the kernel. */
  readonly landlock: (abi: number) => Held;
  readonly seatbelt: Held;
  readonly none: Held;
}

const yes = (how: string): Held => ({ holds: true, how });
const no = (how: string): Held => ({ holds: false, how });
const same = (held: Held) => () => held;
const UNCONFINED = no("nothing: shell:exec and dependencies are refused (or run unconfined)");

export const WALL_HOLDS: readonly WallRow[] = [
  {
    what: "secrets (keys, credentials, other homes, /etc/shadow)",
    bubblewrap: yes("hidden by mounts"),
    landlock: same(yes("left out of the allowed set (names inside a secret folder stay listable)")),
    seatbelt: yes("denied by path, after every allow"),
    none: UNCONFINED,
  },
  {
    what: "writes only to the workspace and grants",
    bubblewrap: yes("read-only mounts elsewhere"),
    landlock: same(yes("the only writable set, with a private folder for HOME, TMPDIR, Deno")),
    seatbelt: yes("allowed only there and in a private folder"),
    none: UNCONFINED,
  },
  {
    what: "protected and control files",
    bubblewrap: yes("read-only binds"),
    landlock: same(
      no("writable during a shell:exec command and put back after it; not for dependencies"),
    ),
    seatbelt: yes("denied by path; their folders can be neither moved nor removed"),
    none: UNCONFINED,
  },
  {
    what: "pml's own process (/proc/<pid>/environ)",
    bubblewrap: yes("not visible: own pid namespace"),
    landlock: same(yes("refused by Landlock's ptrace rule")),
    seatbelt: yes("another process's memory and environment are refused to the sandbox"),
    none: UNCONFINED,
  },
  {
    what: "network only through the proxy, to granted hosts",
    bubblewrap: yes("own network namespace"),
    landlock: (abi) =>
      abi >= 4
        ? yes("TCP connect only to the proxy's ports, no bind; UDP, raw, netlink refused (seccomp)")
        : no("TCP is not restricted by this ABI: refused without grants, any TCP with grants"),
    seatbelt: yes("outbound TCP only to the proxy's two loopback ports"),
    none: UNCONFINED,
  },
  {
    what: "abstract unix sockets and signals outside the sandbox",
    bubblewrap: yes("own namespaces"),
    landlock: (abi) =>
      abi >= 6 ? yes("scoped to the sandbox") : no("not scoped by this ABI (needs ABI 6)"),
    seatbelt: yes("signals to the same sandbox only; no abstract sockets on macOS"),
    none: UNCONFINED,
  },
  {
    what: "never root inside",
    bubblewrap: yes("uid 65534 in a user namespace"),
    landlock: same(no("when pml runs as root: uid 0 without any capability")),
    seatbelt: no("the user's own uid"),
    none: UNCONFINED,
  },
  {
    what: "sized /tmp and /dev/shm",
    bubblewrap: yes("tmpfs mounts of a fixed size"),
    landlock: same(
      no("no private /tmp (TMPDIR is a private folder on disk); writes per call capped"),
    ),
    seatbelt: no("a private folder on disk; writes per call capped"),
    none: UNCONFINED,
  },
  {
    what: "detached processes end with the sandbox",
    bubblewrap: yes("pid namespace"),
    landlock: (abi) =>
      abi >= 6
        ? yes("the init is the subreaper, and kills what is left when pml goes")
        : no("killed with the sandbox, but not when pml is SIGKILLed (needs ABI 6)"),
    seatbelt: no("no pid namespace: a process a command detached is not found"),
    none: UNCONFINED,
  },
  {
    what: "tasks capped",
    bubblewrap: yes("RLIMIT_NPROC in the user namespace; a cgroup as root"),
    landlock: same(yes("RLIMIT_NPROC over the uid's tasks; a cgroup as root; the watchdog")),
    seatbelt: no("macOS counts processes per user: the watchdog only"),
    none: UNCONFINED,
  },
];
