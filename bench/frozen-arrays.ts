/**
 * What freezing an array costs its readers in JavaScriptCore: `npx bun bench/frozen-arrays.ts`.
 * A frozen, sealed or non-extensible array leaves the fast (contiguous) storage for dictionary
 * storage (its kind becomes `ArrayWithArrayStorage`, with a `SparseArrayValueMap` cell), where
 * each element read takes a slow path. Times, in nanoseconds a call, an indexed loop, a `for...of`
 * and an `includes` over a 5-element array of strings of each kind (each kind through its own copy
 * of the functions, so none is slowed by meeting the others), over `ROUNDS` (default 3) rounds
 * of `CALLS` (default 2,000,000) calls.
 * (bench/HISTORY.md, "Frozen arrays on the request path, tried": why they stay frozen.)
 */
import { jscDescribe } from "bun:jsc";

/** A positive whole count from the environment, or the default; anything else stops the run. */
function countOf(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) {
    console.error(`${name} must be a whole number of at least 1 (got "${raw}")`);
    process.exit(2);
  }
  return value;
}
const CALLS = countOf("CALLS", 2_000_000);
const rounds = countOf("ROUNDS", 3);
const make = () => ["alpha", "beta", "gamma", "delta", "epsilon"].map((s) => `${s}`);
const kinds: [string, (a: string[]) => readonly string[]][] = [
  ["plain", (a) => a],
  ["frozen", (a) => Object.freeze(a)],
  ["sealed", (a) => Object.seal(a)],
  ["non-extensible", (a) => Object.preventExtensions(a)],
];

/** The three readers, compiled afresh for each kind (new Function: no shared type profile). */
function readers() {
  return {
    indexed: new Function("a", "let n = 0; for (let i = 0; i < a.length; i++) n += a[i].length; return n;") as (
      a: readonly string[],
    ) => number,
    forOf: new Function("a", "let n = 0; for (const s of a) n += s.length; return n;") as (
      a: readonly string[],
    ) => number,
    includes: new Function("a", "return a.includes('epsilon') ? 1 : 0;") as (a: readonly string[]) => number,
  };
}

function time(read: (a: readonly string[]) => number, array: readonly string[]): number {
  let sink = 0;
  const start = Bun.nanoseconds();
  for (let i = 0; i < CALLS; i++) sink += read(array);
  const ns = (Bun.nanoseconds() - start) / CALLS;
  if (sink < 0) console.log(sink);
  return ns;
}

const rows: Record<string, { kind: string; indexed: number[]; forOf: number[]; includes: number[] }> = {};
for (let round = 0; round < rounds; round++) {
  for (const [name, shape] of kinds) {
    const array = shape(make());
    const r = readers();
    if (rows[name] === undefined) {
      const kind = /Array, \([^)]*\)\{\}, (\w+)/.exec(jscDescribe(array))?.[1] ?? "?";
      rows[name] = { kind, indexed: [], forOf: [], includes: [] };
    }
    const row = rows[name];
    row.indexed.push(time(r.indexed, array));
    row.forOf.push(time(r.forOf, array));
    row.includes.push(time(r.includes, array));
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(`| array | JavaScriptCore kind | indexed loop | for...of | includes |`);
console.log(`|---|---|---:|---:|---:|`);
for (const [name, row] of Object.entries(rows)) {
  const cell = (xs: number[]) => `${median(xs).toFixed(1)} ns`;
  console.log(`| ${name} | ${row.kind} | ${cell(row.indexed)} | ${cell(row.forOf)} | ${cell(row.includes)} |`);
}
console.log(`(median of ${rounds} rounds of ${CALLS.toLocaleString("en-US")} calls, 5 strings an array)`);
