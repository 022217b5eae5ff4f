/**
 * The collections JavaScriptCore made, read from a server's output under `BUN_JSC_logGC=true`
 * (bench/tail-variants.ts with `GCS=1`). A cycle starts with a line
 * `[GC<0x…>: START M 44627kb => EdenCollection, …` and stops the world one or more times; each stop
 * ends with `p=<ms>ms (max …)`: `…)...]` when the cycle goes on concurrently after it, `…), cycle
 * <ms>ms END]` at the cycle's last. The thread that owns the heap runs no JavaScript during a stop,
 * so on the request thread's heap a stop holds every answer due then.
 */

/** One heap's collections of one kind. */
export interface Collections {
  /** The heap's address as logged (one a thread: the request thread's, the embedded store's). */
  readonly heap: string;
  readonly kind: string;
  readonly cycles: number;
  /** Every stop of the world, ms, in order. */
  readonly pauses: number[];
}

const START = /GC<(0x[0-9a-f]+)>: START M \d+kb => (\w+)/;
const PAUSE = /GC<(0x[0-9a-f]+)>: .*p=([0-9.]+)ms \(max [0-9.]+\)(?:\.\.\.\]|, cycle [0-9.]+ms END\])/;

/** The collections in a piece of a server's output, by heap and kind, the busiest heap first. */
export function collectionsIn(text: string): Collections[] {
  const kindOf = new Map<string, string>();
  const found = new Map<string, { heap: string; kind: string; cycles: number; pauses: number[] }>();
  const entry = (heap: string, kind: string) => {
    const key = `${heap} ${kind}`;
    let e = found.get(key);
    if (e === undefined) {
      e = { heap, kind, cycles: 0, pauses: [] };
      found.set(key, e);
    }
    return e;
  };
  for (const line of text.split("\n")) {
    const start = START.exec(line);
    if (start) {
      kindOf.set(start[1] as string, start[2] as string);
      entry(start[1] as string, start[2] as string).cycles++;
    }
    const pause = PAUSE.exec(line);
    const kind = pause ? kindOf.get(pause[1] as string) : undefined;
    // A pause of a cycle whose start came before this piece of output is left out.
    if (pause && kind !== undefined) entry(pause[1] as string, kind).pauses.push(Number(pause[2]));
  }
  const total = (c: Collections) => c.pauses.reduce((a, b) => a + b, 0);
  return [...found.values()].sort((a, b) => total(b) - total(a));
}

/** One line a heap and kind: cycles, stops, the time stopped in all, the mean and longest stop. */
export function describeCollections(collections: readonly Collections[]): string[] {
  return collections.map((c) => {
    const sum = c.pauses.reduce((a, b) => a + b, 0);
    const longest = c.pauses.length === 0 ? 0 : Math.max(...c.pauses);
    const mean = c.pauses.length === 0 ? 0 : sum / c.pauses.length;
    return `${c.heap} ${c.kind}: ${c.cycles} cycles, ${c.pauses.length} stops, ${sum.toFixed(1)} ms stopped (mean ${mean.toFixed(2)}, longest ${longest.toFixed(1)})`;
  });
}

// `npx bun bench/gc-log.ts <server output>`: the collections in a whole log.
if (import.meta.main) {
  const file = process.argv[2];
  if (file === undefined) {
    console.error("usage: npx bun bench/gc-log.ts <server output written with BUN_JSC_logGC=true>");
    process.exit(2);
  }
  for (const line of describeCollections(collectionsIn(await Bun.file(file).text()))) console.log(line);
}
