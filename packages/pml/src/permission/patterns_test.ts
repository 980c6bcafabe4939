import { assertEquals } from "../testing/assert.ts";
import { checkPermission, inferCapabilityApprovalMode, matchesPattern } from "./patterns.ts";

Deno.test("matchesPattern: *, ns, ns:*, exact", () => {
  assertEquals(matchesPattern("*", "filesystem:read_file"), true);
  assertEquals(matchesPattern("filesystem", "filesystem:read_file"), true);
  assertEquals(matchesPattern("filesystem:*", "filesystem:read_file"), true);
  assertEquals(matchesPattern("filesystem:read_file", "filesystem:read_file"), true);
  assertEquals(matchesPattern("filesystem:write_file", "filesystem:read_file"), false);
  assertEquals(matchesPattern("file", "filesystem:read_file"), false);
  assertEquals(matchesPattern("filesystem:read", "filesystem:read_file"), false);
  assertEquals(matchesPattern("shell:*", "filesystem:read_file"), false);
});

Deno.test("checkPermission: deny, then exact ask/allow, then wildcard ask/allow, unknown → ask", () => {
  const perms = { allow: ["*"], ask: ["filesystem:write_file"], deny: ["shell"] };
  assertEquals(checkPermission("shell:exec", perms), "deny");
  assertEquals(checkPermission("filesystem:write_file", perms), "ask");
  assertEquals(checkPermission("filesystem:read_file", perms), "allow");
  assertEquals(checkPermission("x:y", { allow: [], ask: [], deny: [] }), "ask");
  // An exact id in allow (what "always" writes) wins over a wildcard ask (the seed's serena:*).
  assertEquals(
    checkPermission("json:parse", { allow: ["json:parse"], ask: ["json"], deny: [] }),
    "allow",
  );
  assertEquals(
    checkPermission("shell:exec", { allow: ["shell:exec"], ask: ["*"], deny: [] }),
    "allow",
  );
  assertEquals(
    checkPermission("shell:kill", { allow: ["shell:exec"], ask: ["shell:*"], deny: [] }),
    "ask",
  );
  // The same exact id in both lists: ask wins; a wildcard allow never beats a wildcard ask.
  assertEquals(
    checkPermission("json:parse", { allow: ["json:parse"], ask: ["json:parse"], deny: [] }),
    "ask",
  );
  assertEquals(
    checkPermission("json:parse", { allow: ["json"], ask: ["*"], deny: [] }),
    "ask",
  );
  // Deny always wins, even a wildcard deny over an exact allow.
  assertEquals(
    checkPermission("shell:exec", { allow: ["shell:exec"], ask: [], deny: ["shell:*"] }),
    "deny",
  );
  assertEquals(
    checkPermission("json:parse", { allow: ["json"], ask: [], deny: ["json:parse"] }),
    "deny",
  );
});

Deno.test("inferCapabilityApprovalMode: any deny blocks, any ask asks, all allow is auto", () => {
  const perms = {
    allow: ["filesystem:read_file", "json"],
    ask: ["filesystem:write_file"],
    deny: ["shell"],
  };
  assertEquals(inferCapabilityApprovalMode(["filesystem:read_file", "json:parse"], perms), "auto");
  assertEquals(
    inferCapabilityApprovalMode(["filesystem:read_file", "filesystem:write_file"], perms),
    "ask",
  );
  assertEquals(
    inferCapabilityApprovalMode(["filesystem:write_file", "shell:exec"], perms),
    "blocked",
  );
  assertEquals(inferCapabilityApprovalMode(["unknown:tool"], perms), "ask");
  assertEquals(inferCapabilityApprovalMode([], perms), "auto");
});
