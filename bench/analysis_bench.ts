/**
 * Static analysis of a 50-line `pml:execute` snippet, against the bare `@babel/parser` parse of
 * the same snippet as the direct baseline (the analysis = parse + one walk).
 *
 * Run: `deno run -A bench/analysis_bench.ts`
 */
import { parse, type ParserOptions } from "@babel/parser";
import { analyzeCode } from "../packages/pml/src/analysis/mod.ts";
import { SNIPPET_50 } from "../packages/pml/src/analysis/testdata/snippets.ts";
import { figure } from "./_stats.ts";

const WARMUP = 500;
const ITERATIONS = 2000;
const SERVER_NS = new Set(["json", "math", "text", "tavily", "slack"]);
const routeOf = (id: string) => SERVER_NS.has(id.slice(0, id.indexOf(":"))) ? "server" : "client";
/** The options `analyzeCode` parses with. */
const PARSE_OPTIONS: ParserOptions = {
  sourceType: "module",
  plugins: ["typescript"],
  allowReturnOutsideFunction: true,
  allowAwaitOutsideFunction: true,
  errorRecovery: false,
  attachComment: false,
};

/**
 * Times `a` and `b` on alternate turns (order swapped each iteration), so that both see the same
 * machine load, JIT state and garbage collections. Both are awaited (`analyzeCode` is async: the
 * parser is imported on first use), so both pay the same microtask. Returns sorted samples in ms.
 */
async function measurePair(a: () => unknown, b: () => unknown): Promise<[number[], number[]]> {
  for (let i = 0; i < WARMUP; i++) (await a(), await b());
  const sa: number[] = [];
  const sb: number[] = [];
  const time = async (fn: () => unknown, into: number[]) => {
    const t0 = performance.now();
    await fn();
    into.push(performance.now() - t0);
  };
  for (let i = 0; i < ITERATIONS; i++) {
    if (i % 2 === 0) (await time(a, sa), await time(b, sb));
    else (await time(b, sb), await time(a, sa));
  }
  return [sa.sort((x, y) => x - y), sb.sort((x, y) => x - y)];
}

const pct = (s: number[], p: number) => s[Math.min(s.length - 1, Math.floor(s.length * p))];
const ms = (x: number) => `${x.toFixed(3)} ms`;

const check = await analyzeCode(SNIPPET_50, { routeOf });
if (!check.ok || check.tasks.length !== 9) throw new Error("analysis bench: unexpected analysis");

const [analysis, baseline] = await measurePair(
  () => analyzeCode(SNIPPET_50, { routeOf }),
  () => parse(SNIPPET_50, PARSE_OPTIONS),
);

const lines = SNIPPET_50.split("\n").length;
console.log(
  `analysis bench: ${lines}-line snippet, ${ITERATIONS} iterations after ${WARMUP} warm-up`,
);
console.log(`  analyzeCode       median ${ms(pct(analysis, 0.5))}  p99 ${ms(pct(analysis, 0.99))}`);
console.log(`  @babel/parser     median ${ms(pct(baseline, 0.5))}  p99 ${ms(pct(baseline, 0.99))}`);
console.log(
  `  ratio analyzeCode / bare parse (median): ${
    (pct(analysis, 0.5) / pct(baseline, 0.5)).toFixed(2)
  }x` +
    `  (target: analyzeCode median < 1 ms: ${pct(analysis, 0.5) < 1 ? "met" : "MISSED"})`,
);
figure({
  id: "7-analysis",
  what: "static analysis of a 50-line `pml:execute` snippet (anchor: bare `@babel/parser`)",
  now: `${ms(pct(analysis, 0.5))} (parse alone: ${ms(pct(baseline, 0.5))})`,
  target: "< 1 ms",
  met: pct(analysis, 0.5) < 1,
  bench: "analysis",
});
