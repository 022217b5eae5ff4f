/**
 * Condition compiler: a validated condition becomes a closure over the fact snapshot. Paths are
 * split, dates parsed, durations converted and `in` lists turned into sets here, once per deploy.
 *
 * A closure answers TRUE, FALSE or ERROR. ERROR means it read a fact that is unavailable (a
 * `content.*` fact with no verified descriptor, a `user.*` fact with no user, a meter that cannot
 * be read); the feature then takes its error slot. Combinators short-circuit left to right, so a
 * fact that is never reached is never read.
 */
import {
  type Condition,
  type FactNamespace,
  type FactTestCondition,
  ISO_INSTANT,
  instantOf,
  parseDuration,
} from "./document-schema";
import type { FactSnapshot, MeterKind } from "./types";

export const FALSE = 0;
export const TRUE = 1;
export const ERROR = 2;
export type Truth = typeof FALSE | typeof TRUE | typeof ERROR;

/** Meter values a feature's rules read during one evaluation, as the decision reports them. */
export type MeterValues = Record<string, { readonly allowance: number; readonly count: number }>;

/** Per-evaluation scratch: created lazily by the first meter read. */
export interface EvalState {
  meters: MeterValues | undefined;
}

export type CompiledCondition = (snapshot: FactSnapshot, state: EvalState) => Truth;

/** Returned by a fact accessor when the fact's namespace is unavailable in the snapshot. */
export const UNAVAILABLE: unique symbol = Symbol("unavailable");
export type FactAccessor = (snapshot: FactSnapshot) => unknown;

export interface ConditionEnvironment {
  /** Kind of a declared meter (the document was validated, so every read meter exists). */
  readonly meterKind: (name: string) => MeterKind;
}

type Root = (s: FactSnapshot) => unknown;

/** A snapshot built without newsletter standings (its features read none): every list unknown. */
const NO_STANDINGS: Readonly<Record<string, string>> = Object.freeze({});

const ROOTS: Record<FactNamespace, Root> = {
  content: (s) => s.content,
  grants: (s) => s.grants,
  user: (s) => s.user,
  org: (s) => s.org,
  context: (s) => s.context,
  streaming: (s) => s.streaming,
  external: (s) => s.external,
  gift: (s) => s.gift,
  newsletters: (s) => s.newsletters ?? NO_STANDINGS,
};

// Bound once, not read from the global object in the hot path: a compiled function's read of a
// global left its compiled form whenever that object changed (docs/performance.md, "Compiles in
// the measured windows").
const hasOwn = Object.hasOwn;

/** Own members only: `content.constructor` must not reach Object.prototype. */
function member(value: unknown, key: string): unknown {
  return typeof value === "object" && value !== null && hasOwn(value, key)
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

/**
 * Compiles "namespace.a.b" to an accessor. A null namespace (content, user) yields UNAVAILABLE; a
 * missing member anywhere along the path yields undefined.
 */
export function compileFactAccessor(path: string): FactAccessor {
  const [ns, ...rest] = path.split(".");
  const root = ROOTS[ns as FactNamespace];
  if (root === undefined || rest.length === 0) throw new Error(`invalid fact path ${path}`);
  if (rest.length === 1) {
    const k0 = rest[0] as string;
    return (s) => {
      const r = root(s);
      return r === null ? UNAVAILABLE : member(r, k0);
    };
  }
  if (rest.length === 2) {
    const k0 = rest[0] as string;
    const k1 = rest[1] as string;
    return (s) => {
      const r = root(s);
      return r === null ? UNAVAILABLE : member(member(r, k0), k1);
    };
  }
  const keys = rest;
  const n = keys.length;
  return (s) => {
    let v = root(s);
    if (v === null) return UNAVAILABLE;
    for (let i = 0; i < n; i++) {
      v = member(v, keys[i] as string);
      if (v === undefined) return undefined;
    }
    return v;
  };
}

/** A fact value read as an instant: epoch ms for numbers, ISO 8601 strings parsed; else NaN. */
function factInstant(v: unknown): number {
  if (typeof v === "number") return Number.isFinite(v) ? v : Number.NaN;
  if (typeof v === "string" && ISO_INSTANT.test(v)) return Date.parse(v);
  return Number.NaN;
}

type Predicate = (v: unknown, s: FactSnapshot) => boolean;

function membership(values: readonly (string | number | boolean | null)[]): (v: unknown) => boolean {
  if (values.length > 8) {
    const set = new Set<unknown>(values);
    return (v) => set.has(v);
  }
  const list: readonly unknown[] = values.slice();
  return (v) => list.includes(v);
}

function comparison(
  value: string | number,
  test: (a: number, b: number) => boolean,
  testS: (a: string, b: string) => boolean,
): Predicate {
  if (typeof value === "number") return (v) => typeof v === "number" && test(v, value);
  return (v) => typeof v === "string" && testS(v, value);
}

function factPredicate(c: FactTestCondition): Predicate {
  if (c.eq !== undefined) {
    const x = c.eq;
    return (v) => v === x;
  }
  if (c.ne !== undefined) {
    const x = c.ne;
    return (v) => v !== x;
  }
  if (c.lt !== undefined)
    return comparison(
      c.lt,
      (a, b) => a < b,
      (a, b) => a < b,
    );
  if (c.lte !== undefined)
    return comparison(
      c.lte,
      (a, b) => a <= b,
      (a, b) => a <= b,
    );
  if (c.gt !== undefined)
    return comparison(
      c.gt,
      (a, b) => a > b,
      (a, b) => a > b,
    );
  if (c.gte !== undefined)
    return comparison(
      c.gte,
      (a, b) => a >= b,
      (a, b) => a >= b,
    );
  if (c.in !== undefined) return membership(c.in);
  if (c.notIn !== undefined) {
    const has = membership(c.notIn);
    return (v) => !has(v);
  }
  if (c.contains !== undefined) {
    const x = c.contains;
    return (v) => {
      if (Array.isArray(v)) return v.includes(x);
      return typeof v === "string" && typeof x === "string" && v.includes(x);
    };
  }
  if (c.exists !== undefined) {
    const want = c.exists;
    return (v) => (v !== undefined && v !== null) === want;
  }
  if (c.before !== undefined) {
    const t = instantOf(c.before);
    return (v) => factInstant(v) < t;
  }
  if (c.after !== undefined) {
    const t = instantOf(c.after);
    return (v) => factInstant(v) > t;
  }
  if (c.withinLast !== undefined) {
    const d = parseDuration(c.withinLast);
    return (v, s) => {
      const t = factInstant(v);
      return t >= s.now - d && t <= s.now;
    };
  }
  if (c.olderThan !== undefined) {
    const d = parseDuration(c.olderThan);
    return (v, s) => factInstant(v) < s.now - d;
  }
  throw new Error(`fact test on ${c.fact} has no operator`);
}

function compileFactTest(c: FactTestCondition): CompiledCondition {
  const get = compileFactAccessor(c.fact);
  const test = factPredicate(c);
  return (s) => {
    const v = get(s);
    if (v === UNAVAILABLE) return ERROR;
    return test(v, s) ? TRUE : FALSE;
  };
}

function compileMeterTest(c: Extract<Condition, { meter: string }>, env: ConditionEnvironment): CompiledCondition {
  const name = c.meter;
  const seenKind = env.meterKind(name) === "seen";
  let test: (remaining: number, seen: boolean) => boolean;
  if (c.allows !== undefined) {
    const want = c.allows;
    test = (remaining, seen) => (remaining > 0 || (seenKind && seen)) === want;
  } else {
    const r = c.remaining ?? {};
    if (r.gt !== undefined) {
      const n = r.gt;
      test = (x) => x > n;
    } else if (r.gte !== undefined) {
      const n = r.gte;
      test = (x) => x >= n;
    } else if (r.lt !== undefined) {
      const n = r.lt;
      test = (x) => x < n;
    } else if (r.lte !== undefined) {
      const n = r.lte;
      test = (x) => x <= n;
    } else if (r.eq !== undefined) {
      const n = r.eq;
      test = (x) => x === n;
    } else throw new Error(`meter test on ${name} has no operator`);
  }
  return (s, state) => {
    const read = s.meter(name);
    if (read === undefined) return ERROR;
    if (state.meters === undefined) state.meters = {};
    state.meters[name] = { allowance: read.allowance, count: read.count };
    return test(read.allowance - read.count, read.seen) ? TRUE : FALSE;
  };
}

/** Compiles a validated condition to a closure. */
export function compileCondition(c: Condition, env: ConditionEnvironment): CompiledCondition {
  if ("all" in c) {
    const parts = c.all.map((x) => compileCondition(x, env));
    if (parts.length === 1) return parts[0] as CompiledCondition;
    return (s, st) => {
      for (const p of parts) {
        const r = p(s, st);
        if (r !== TRUE) return r;
      }
      return TRUE;
    };
  }
  if ("any" in c) {
    const parts = c.any.map((x) => compileCondition(x, env));
    if (parts.length === 1) return parts[0] as CompiledCondition;
    return (s, st) => {
      for (const p of parts) {
        const r = p(s, st);
        if (r !== FALSE) return r;
      }
      return FALSE;
    };
  }
  if ("not" in c) {
    const inner = compileCondition(c.not, env);
    return (s, st) => {
      const r = inner(s, st);
      return r === ERROR ? ERROR : r === TRUE ? FALSE : TRUE;
    };
  }
  if ("atLeast" in c) {
    const parts = c.of.map((x) => compileCondition(x, env));
    const need = c.atLeast;
    const n = parts.length;
    return (s, st) => {
      let yes = 0;
      for (let i = 0; i < n; i++) {
        const r = (parts[i] as CompiledCondition)(s, st);
        if (r === ERROR) return ERROR;
        if (r === TRUE && ++yes >= need) return TRUE;
        // Stop once the rest cannot reach `need`.
        if (yes + (n - i - 1) < need) return FALSE;
      }
      return FALSE;
    };
  }
  if ("meter" in c) return compileMeterTest(c, env);
  return compileFactTest(c);
}

/** Whether a condition may read a fact of the namespace (`streaming`, ...). */
export function readsNamespace(c: Condition, ns: FactNamespace): boolean {
  if ("all" in c) return c.all.some((x) => readsNamespace(x, ns));
  if ("any" in c) return c.any.some((x) => readsNamespace(x, ns));
  if ("not" in c) return readsNamespace(c.not, ns);
  if ("atLeast" in c) return c.of.some((x) => readsNamespace(x, ns));
  return "fact" in c && c.fact.startsWith(`${ns}.`);
}

/** Meter names a condition may read, in first-appearance order. */
export function metersRead(c: Condition, into: string[] = []): string[] {
  if ("all" in c) for (const x of c.all) metersRead(x, into);
  else if ("any" in c) for (const x of c.any) metersRead(x, into);
  else if ("not" in c) metersRead(c.not, into);
  else if ("atLeast" in c) for (const x of c.of) metersRead(x, into);
  else if ("meter" in c && !into.includes(c.meter)) into.push(c.meter);
  return into;
}
