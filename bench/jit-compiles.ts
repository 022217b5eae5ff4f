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

/** A function whose optimized code was thrown away and compiled again, with the exits before. */
export interface Reoptimization {
  readonly name: string;
  /** The OSR exits of that function last seen before it (kind and bytecode, newest last). */
  readonly exits: readonly string[];
}

const EXIT = /^Generated JIT code for (?:DFG|FTL) OSR exit #\d+ \((?:D@\d+, )?(.*)\) from (\S*?#\w+):/;
const REOPTIMIZE = /^(\S*?#\w+):\[.*\]: Entered reoptimize$/;

/**
 * The reoptimizations in a server's output under `BUN_JSC_verboseOSR=true`: each time a function's
 * optimized code exits often enough to be compiled again, JavaScriptCore prints "Entered
 * reoptimize" for it, and each exit's first use printed its kind ("BadCache", "BadType", ...).
 */
export function reoptimizationsIn(text: string, keepExits = 2): Reoptimization[] {
  const exits = new Map<string, string[]>();
  const out: Reoptimization[] = [];
  for (const line of text.split("\n")) {
    const exit = EXIT.exec(line);
    if (exit) {
      const list = exits.get(exit[2] as string) ?? [];
      list.push((exit[1] as string).replace(/<0x[0-9a-f]+>/g, ""));
      exits.set(exit[2] as string, list);
      continue;
    }
    const again = REOPTIMIZE.exec(line);
    if (again) {
      const id = again[1] as string;
      out.push({ name: id.slice(0, id.indexOf("#")) || "(anonymous)", exits: (exits.get(id) ?? []).slice(-keepExits) });
    }
  }
  return out;
}

// `npx bun bench/jit-compiles.ts <server output> [name,...]`: the optimizing compiles and the
// reoptimizations in a log written with BUN_JSC_reportCompileTimes and BUN_JSC_verboseOSR
// (tail-variants' TAIL_LOG_DIR); with names, the reoptimizations of those functions one a line.
if (import.meta.main) {
  const [file, names] = process.argv.slice(2);
  if (file === undefined) {
    console.error("usage: bench/jit-compiles.ts <server output> [name,...]");
    process.exit(2);
  }
  const text = await Bun.file(file).text();
  const again = reoptimizationsIn(text);
  console.log(`optimizing compiles: ${describeCompiles(compilesIn(text), 5)}`);
  console.log(`reoptimizations: ${again.length}`);
  const wanted = names === undefined ? null : new Set(names.split(","));
  const counts = new Map<string, number>();
  for (const r of again) {
    if (wanted !== null && !wanted.has(r.name)) continue;
    counts.set(r.name, (counts.get(r.name) ?? 0) + 1);
    console.log(`  ${r.name}: after ${r.exits.join("; ") || "no exit printed"}`);
  }
  if (wanted !== null) console.log(`of the names given: ${[...counts.values()].reduce((a, b) => a + b, 0)}`);
}
