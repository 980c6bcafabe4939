import { analyzeCode } from "./mod.ts";
import { SNIPPET_50 } from "./testdata/snippets.ts";
const routeOf = (id: string) => (["json", "math", "tavily", "text", "slack"].includes(id.split(":")[0]) ? "server" : "client") as "server" | "client";
const code = Deno.args[0] ?? SNIPPET_50;
const a = analyzeCode(code, { routeOf });
console.log(SNIPPET_50.split("\n").length);
if (a.ok) { for (const t of a.tasks) console.log(t.id, t.tool, t.line, t.inLoop, t.dependsOn.join(",")); console.log(a.dynamic, a.routing); } else console.log(a);
