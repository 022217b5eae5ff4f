/**
 * What JavaScriptCore's optimizing compilers did, read from a server's output under
 * `BUN_JSC_reportCompileTimes=true` (bench/tail-variants.ts with `COMPILES=1`). Each optimizing
 * compile prints a line such as
 * `Optimized holdMeters#CAzLPC:[…] using FTL with FTL into 16416 bytes in 134.998880 ms (DFG: …)`;
 * Baseline compiles (a fraction of a millisecond each) are left out. The compiler threads run on
 * the server's core, so a compile in a measured window is CPU taken beside the request thread, and
 * the function runs in a lower tier until it lands.
 */

/** One optimizing compile: the function's name (JavaScriptCore's, `#hash` dropped), tier, ms. */
export interface Compile {
  readonly name: string;
  readonly tier: "DFG" | "FTL";
  readonly ms: number;
}

const LINE = /^Optimized (\S*?)#\S*:\[.*\] using (DFG|FTL) with \S+ into \d+ bytes in ([0-9.]+) ms/;

/** The optimizing compiles in a piece of a server's output, in order. */
export function compilesIn(text: string): Compile[] {
  const out: Compile[] = [];
  for (const line of text.split("\n")) {
    const m = LINE.exec(line);
    if (m) out.push({ name: m[1] || "(anonymous)", tier: m[2] as "DFG" | "FTL", ms: Number(m[3]) });
  }
  return out;
}

/** One line: count and compile time per tier, and the `top` longest compiles. */
export function describeCompiles(compiles: readonly Compile[], top = 3): string {
  const tier = (t: "DFG" | "FTL") => {
    const of = compiles.filter((c) => c.tier === t);
    return `${of.length} ${t} (${of.reduce((a, c) => a + c.ms, 0).toFixed(1)} ms)`;
  };
  const longest = [...compiles]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, top)
    .map((c) => `${c.name} ${c.tier} ${c.ms.toFixed(1)}`);
  return `${tier("DFG")}, ${tier("FTL")}${longest.length > 0 ? `; longest: ${longest.join(", ")} ms` : ""}`;
}
