import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import fc from "fast-check";
import { rowsOf } from "../../db/client";
import { storeKinds } from "../helpers/databases";
import { describeCase, type FuzzCase, inWorld, PLACEHOLDERS, requestArb, shown, toRequest } from "./requests";
import { ROUTES, type RouteSpec, routeName } from "./route-table";
import { buildWorld, FUZZ_MAX_BODY_BYTES, type FuzzWorld } from "./world";

/**
 * Property-based fuzzing of every route (fast-check). For each generated request:
 * - the status is below 500;
 * - an answer that is not a success carries JSON and the envelope `{ error: { code, message } }`,
 *   except the route's documented non-JSON answers (302 redirect, HTML page, 204 preflight);
 * - no counter flush fails because of it;
 * - a request answered 4xx changed no stored row (every table hashed before and after, with the
 *   counters flushed and the outbox drained first).
 * Bounded: a fixed seed and FUZZ_RUNS cases per route (FUZZ_SEED and FUZZ_RUNS override them).
 * A failure shows the smallest request fast-check shrank it to, and how to replay it.
 * Credentials are mostly valid (a real key, session, operator token) so that hostile bodies,
 * paths and queries get past the guards to validation, the services and the store.
 */

const SEED = Number(process.env.FUZZ_SEED ?? 20_2026);
const RUNS = Number(process.env.FUZZ_RUNS ?? 30);
/** Per route, shrinking included: a failing route stops here and reports its smallest case so far. */
const ROUTE_TIME_LIMIT_MS = Number(process.env.FUZZ_ROUTE_MS ?? 15_000);
/** A request unanswered this long is a failure of its own (a hang), not a slow case. */
const CASE_TIME_LIMIT_MS = 5_000;

const FLUSH_FAILED = "counter flush failed";

/**
 * FUZZ_SURVEY=1: never stop at a failure; collect every distinct failure (route and kind) with
 * the shortest request that showed it, and print them at the end. For hunting, not for CI.
 */
const SURVEY = process.env.FUZZ_SURVEY === "1";

/** What kind of failure a sentence reports, without its particulars (for the survey). */
const failureKind = (failure: string) => failure.replace(/\(.*$/s, "").replace(/: .*$/s, "").trim();

interface Answer {
  status: number;
  contentType: string | null;
  text: string;
}

function isEnvelope(text: string): boolean {
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    return typeof body?.error?.code === "string" && typeof body.error.message === "string";
  } catch {
    return false;
  }
}

describe.each(storeKinds)("fuzz: every route on the %s store", (kind) => {
  let fw: FuzzWorld;
  let last: Map<string, string>;
  /** Set once a flush has failed: the counters keep the bad row, so later flushes fail too. */
  let flushBroken = false;
  const counts = new Map<string, number>();
  /** Statuses answered per route, to show how deep the cases reached. */
  const statuses = new Map<string, Map<number, number>>();
  /** FUZZ_SURVEY: each distinct failure with its shortest request. */
  const survey = new Map<string, { failures: string[]; request: string }>();

  /** Lands what the last request left in memory: counter deltas always; handed-off jobs and queued mail after an accepted request. */
  async function settle(accepted = true): Promise<void> {
    await fw.h.deps.flusher.flushAll();
    if (!accepted) return;
    // Work an accepted request handed off (console sign-in, anonymous subscribe) runs now, not
    // behind the next request's back; a pass begun before its job was written may miss it.
    await fw.h.deps.jobs.runDue();
    await fw.h.deps.jobs.runDue();
    await fw.h.deps.outbox.drain();
  }

  async function rebuild(): Promise<void> {
    if (fw) await fw.stop();
    fw = await buildWorld(kind);
    flushBroken = false;
    await settle();
    last = await fw.fingerprint();
  }

  beforeAll(rebuild, 120_000);
  afterAll(async () => {
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    for (const [route, n] of counts) {
      const seen = [...(statuses.get(route) ?? [])].sort(([a], [b]) => a - b).map(([s, k]) => `${s}x${k}`);
      console.log(`fuzz ${kind}: ${n} cases on ${route} (${seen.join(" ")})`);
    }
    console.log(`fuzz ${kind}: ${total} cases over ${counts.size} routes (seed ${SEED}, ${RUNS} runs a route)`);
    for (const [signature, found] of survey) {
      console.log(`\nfuzz survey ${kind}: ${signature}\n${found.failures.join("\n")}\n${found.request}`);
    }
    await fw?.stop();
  }, 60_000);

  it("lists every route the app serves in the fuzz table, and only those", () => {
    const served = fw.h.app.routes.map(routeName).sort();
    const listed = ROUTES.map(routeName).sort();
    expect({ notFuzzed: served.filter((r) => !listed.includes(r)) }).toEqual({ notFuzzed: [] });
    expect({ notServed: listed.filter((r) => !served.includes(r)) }).toEqual({ notServed: [] });
  });

  it("fingerprints a committed write to a table, and not one rolled back", async () => {
    const db = fw.h.deps.database.db;
    const before = await fw.fingerprint();
    await db
      .transaction(async (tx) => {
        await tx.execute(sql`update tenants set public_url = 'https://rolled.example' where id = 'default'`);
        throw new Error("roll back");
      })
      .catch(() => {});
    expect(await fw.fingerprint()).toEqual(before);
    const url = rowsOf<{ u: string | null }>(
      await db.execute(sql`select public_url as u from tenants where id = 'default'`),
    )[0]?.u;
    await db.execute(sql`update tenants set public_url = 'https://changed.example' where id = 'default'`);
    const changed = await fw.fingerprint();
    expect([...changed].filter(([t, h]) => before.get(t) !== h).map(([t]) => t)).toEqual(["tenants"]);
    await db.execute(sql`update tenants set public_url = ${url ?? null} where id = 'default'`);
    expect(await fw.fingerprint()).toEqual(before);
    last = await fw.fingerprint();
  });

  /** One case: the failures it shows, as sentences; empty when it holds. */
  async function check(spec: RouteSpec, c: FuzzCase): Promise<string[]> {
    const failures: string[] = [];
    const logStart = fw.h.logger.lines.length;
    let answer: Answer;
    const started = performance.now();
    try {
      const handled = (async () => {
        const res = await fw.h.app.handle(toRequest(inWorld(c, fw.world)));
        const contentType = res.headers.get("content-type");
        // A stream of events never ends: its headers are the answer, and the stream is closed.
        if (res.ok && contentType?.startsWith("text/event-stream")) {
          await res.body?.cancel();
          return { status: res.status, contentType, text: "" };
        }
        return { status: res.status, contentType, text: await res.text() };
      })();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const hung = new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), CASE_TIME_LIMIT_MS);
      });
      const raced = await Promise.race([handled, hung]);
      clearTimeout(timer);
      if (raced === null) return [`no answer within ${CASE_TIME_LIMIT_MS} ms`];
      answer = raced;
    } catch (error) {
      return [`app.handle threw: ${String(error)}`];
    }
    const brokenBefore = flushBroken;
    await settle(answer.status < 400 || answer.status >= 500);
    const newLines = fw.h.logger.lines.slice(logStart);
    if (newLines.some((l) => l.includes(FLUSH_FAILED))) flushBroken = true;
    const now = await fw.fingerprint();

    const { status } = answer;
    const seen = statuses.get(routeName(spec)) ?? new Map<number, number>();
    seen.set(status, (seen.get(status) ?? 0) + 1);
    statuses.set(routeName(spec), seen);
    const documentedNonJson = spec.nonJson?.includes(status) ?? false;
    if (status >= 500) failures.push(`answered ${status}`);
    if (status >= 300 && !documentedNonJson) {
      if (!answer.contentType?.startsWith("application/json")) {
        failures.push(`answered ${status} with content-type ${answer.contentType}, not the JSON envelope`);
      } else if (
        !isEnvelope(answer.text) &&
        !(spec.errorShape !== undefined && shapeHolds(spec.errorShape, answer.text))
      ) {
        failures.push(`answered ${status} without the envelope { error: { code, message } }`);
      }
    }
    if (process.env.FUZZ_DEBUG)
      console.log(`${kind} ${status} ${(performance.now() - started).toFixed(0)} ms ${describeCase(c).slice(0, 300)}`);
    if (flushBroken && !brokenBefore) {
      const line = newLines.find((l) => l.includes(FLUSH_FAILED)) ?? "";
      failures.push(`a counter flush failed after this request (answered ${status}): ${shown(line, 400)}`);
    }
    if (status >= 400 && status < 500) {
      const changed = [...now].filter(([t, h]) => last.get(t) !== h).map(([t, h]) => `${t} (${last.get(t)} -> ${h})`);
      if (changed.length > 0) failures.push(`answered ${status} but changed stored rows: ${changed.join(", ")}`);
    }
    last = now;
    if (failures.length > 0) failures.push(`answer: ${status} ${answer.contentType} ${shown(answer.text, 400)}`);
    return failures;
  }

  for (const spec of ROUTES) {
    const name = routeName(spec);
    it(`answers below 500, in the envelope, and writes nothing when it refuses: ${name}`, async () => {
      if (flushBroken) await rebuild();
      let cases = 0;
      const property = fc.asyncProperty(requestArb(spec, PLACEHOLDERS, FUZZ_MAX_BODY_BYTES), async (c) => {
        cases++;
        const failures = await check(spec, c);
        if (failures.length === 0) return;
        if (!SURVEY) throw new Error(failures.join("\n"));
        const request = describeCase(c);
        for (const failure of failures.slice(0, -1)) {
          const signature = `${name} | ${failureKind(failure)}`;
          const known = survey.get(signature);
          if (!known || request.length < known.request.length) survey.set(signature, { failures, request });
        }
        if (flushBroken) await rebuild();
      });
      const out = await fc.check(property, {
        seed: SEED,
        numRuns: RUNS,
        path: process.env.FUZZ_PATH,
        plugins: [fc.interruptAfterTimeLimit(ROUTE_TIME_LIMIT_MS)],
      });
      counts.set(name, cases);
      if (out.failed && out.counterexample) {
        const message = out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance);
        throw new Error(
          `${name} on the ${kind} store, after ${out.numRuns} cases and ${out.numShrinks} shrinks:\n` +
            `${message}\nrequest:\n${describeCase((out.counterexample as [FuzzCase])[0])}\n` +
            `(__W_name__ stands for the value of that name made at setup)\n` +
            `replay: FUZZ_SEED=${out.seed} FUZZ_PATH=${out.counterexamplePath} (with -t for this route)`,
        );
      }
      if (out.failed) throw new Error(`${name}: ${String(out.errorInstance ?? "too many skips or interrupted")}`);
    }, 60_000);
  }
});

function shapeHolds(shape: (body: unknown) => boolean, text: string): boolean {
  try {
    return shape(JSON.parse(text));
  } catch {
    return false;
  }
}
