/** Code samples shared by the analysis tests and `bench/analysis_bench.ts`. */

/**
 * A realistic 50-line `pml:execute` body: reads a project's package manifests, parses them,
 * searches the web for outdated dependencies, writes a report and commits it.
 * Expected tasks (in order): t1 filesystem:list_directory, t2 filesystem:read_file (loop),
 * t3 json:parse (loop), t4 tavily:search (map callback), t5 text:summarize,
 * t6 filesystem:write_file, t7 git:status, t8 git:commit, t9 slack:post_message.
 */
export const SNIPPET_50 = `interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
}

const fs = mcp.filesystem;
const { search } = mcp.tavily;
const listing = await fs.list_directory({ path: "packages" });
const manifests: Manifest[] = [];

for (const entry of listing.entries) {
  if (entry.type !== "directory") continue;
  const raw = await fs.read_file({ path: \`packages/\${entry.name}/package.json\` });
  const parsed = await mcp.json.parse({ text: raw.content });
  manifests.push(parsed as Manifest);
}

const names = new Set<string>();
for (const m of manifests) {
  for (const dep of Object.keys(m.dependencies ?? {})) names.add(dep);
}

const findings = await Promise.all(
  [...names].slice(0, 5).map(async (name) => {
    const hits = await search({ query: \`\${name} latest version changelog\`, max_results: 3 });
    return { name, hits: hits.results ?? [] };
  }),
);

const lines: string[] = ["# Dependency report", ""];
for (const f of findings) {
  lines.push(\`## \${f.name}\`);
  for (const h of f.hits) lines.push(\`- [\${h.title}](\${h.url})\`);
  lines.push("");
}

const summary = await mcp.text.summarize({ text: lines.join("\\n"), max_words: 120 });
lines.splice(1, 0, summary.text, "");

await fs.write_file({ path: "docs/deps-report.md", content: lines.join("\\n") });
const status = await mcp.git.status({});
let committed = false;
if (status.changed.includes("docs/deps-report.md")) {
  await mcp.git.commit({ message: "docs: dependency report", paths: ["docs/deps-report.md"] });
  committed = true;
}

await mcp.slack.post_message({ channel: "#deps", text: summary.text, committed });
return { packages: manifests.length, dependencies: names.size, committed };
`;
