/**
 * The bench workload: sets up the site (CLI), issues keys and creates users (CLI for the first,
 * admin API for the bulk), and pre-generates signed decide bodies for many distinct readers and
 * articles. Everything here runs before any measurement: signing is never on the measured path.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { signContentPayload } from "../src/core/verifier";
import { admin, cli, mapLimit, type ServerHandle } from "./server";
import { ALWAYS_FEATURES, BENCH_SITE, buildBenchSite, CONTENT_KEYS, optionalFeatures, SECTIONS } from "./site";

/** A small deterministic PRNG (mulberry32), so every run sends the same mix. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(rand: () => number, list: readonly T[]): T => list[Math.floor(rand() * list.length)] as T;

/** Deploys the bench site through the CLI on a fresh server; returns the document's optional features. */
export async function setupSite(server: ServerHandle, workDir: string): Promise<string[]> {
  const doc = buildBenchSite();
  const file = join(workDir, "bench-site.json");
  writeFileSync(file, JSON.stringify(doc, null, 2));
  await cli(server, ["tenant", "create", "default", "--default"]);
  await cli(server, ["site", "create", BENCH_SITE]);
  await cli(server, ["deploy", BENCH_SITE, file]);
  return optionalFeatures(doc);
}

/** Issues `count` keys for the bench site: the first through the CLI, the rest through the admin API. */
export async function issueKeys(server: ServerHandle, count: number, prefix: string): Promise<string[]> {
  const first = await cli<{ key: string }>(server, ["keys", "issue", BENCH_SITE, "--name", `${prefix}-1`]);
  const rest = await mapLimit(
    Array.from({ length: Math.max(0, count - 1) }, (_, i) => i + 2),
    8,
    (n) =>
      admin<{ key: string }>(server, "POST", `/tenants/default/sites/${BENCH_SITE}/keys`, { name: `${prefix}-${n}` }),
  );
  return [first.key, ...rest.map((r) => r.key)];
}

/** Creates `count` registered readers; every third holds the premium grant. Returns their ids. */
export async function createUsers(server: ServerHandle, count: number): Promise<string[]> {
  return mapLimit(
    Array.from({ length: count }, (_, i) => i),
    8,
    async (i) => {
      const { user } = await admin<{ user: { id: string } }>(server, "POST", "/tenants/default/users", {
        email: `reader-${i}@bench.example`,
      });
      if (i % 3 === 0) {
        await admin(server, "POST", `/tenants/default/users/${user.id}/grants`, { grant: "premium" });
      }
      return user.id;
    },
  );
}

export interface Article {
  readonly section: string;
  /** The `content` member of a decide body, already signed. */
  readonly content: { payload: string; signature: string };
}

/** Signed content descriptors for `count` distinct articles (80% under the first key, 20% under `kid` of the second). */
export function signArticles(count: number, nowMs: number, seed = 1): Article[] {
  const rand = prng(seed);
  const out: Article[] = [];
  const exp = Math.floor(nowMs / 1000) + 3 * 86_400;
  for (let i = 0; i < count; i++) {
    const section = pick(rand, SECTIONS);
    const ageHours = rand() < 0.1 ? rand() * 12 : rand() * 24 * 400;
    const tags: string[] = [section];
    if (rand() < 0.08) tags.push("breaking");
    if (rand() < 0.02) tags.push("legal");
    const useSecond = rand() < 0.2;
    const payload: Record<string, unknown> = {
      id: `a-${100_000 + i}`,
      ...(useSecond ? { kid: CONTENT_KEYS[1].id } : {}),
      section,
      access: rand() < 0.1 ? "free" : "metered",
      tags,
      wordCount: Math.floor(300 + rand() * 4000),
      publishedAt: new Date(nowMs - ageHours * 3_600_000).toISOString(),
      ...(rand() < 0.05 ? { liveBlog: true } : {}),
      exp,
    };
    const text = JSON.stringify(payload);
    const secret = useSecond ? CONTENT_KEYS[1].secret : CONTENT_KEYS[0].secret;
    out.push({ section, content: { payload: text, signature: signContentPayload(text, secret) } });
  }
  return out;
}

const PLATFORMS = ["web", "web", "web", "ios", "android"] as const;
const COUNTRIES = ["GB", "GB", "GB", "US", "IE", "DE", "FR", "AU", "CA", "IN"] as const;
const MEDIUMS = [null, null, null, "email", "social", "search"] as const;

/** A random page context (unverified facts the publisher's server sends). */
function context(rand: () => number, section: string): Record<string, unknown> {
  const medium = pick(rand, MEDIUMS);
  const ctx: Record<string, unknown> = {
    section,
    platform: pick(rand, PLATFORMS),
    country: pick(rand, COUNTRIES),
    scrollDepth: Math.round(rand() * 100) / 100,
    visitsThisWeek: Math.floor(rand() * 9),
    layout: rand() < 0.1 ? "amp" : "standard",
  };
  if (medium) ctx.utm_medium = medium;
  if (rand() < 0.02) ctx.bot = true;
  if (rand() < 0.05) ctx.referrer = "https://www.ox.ac.uk/";
  return ctx;
}

export interface BodyOptions {
  count: number;
  articles: readonly Article[];
  optional: readonly string[];
  /** Distinct anonymous devices to draw from. */
  devices: number;
  /** Registered user ids (a share of requests comes from them). */
  users: readonly string[];
  userShare?: number;
  seed?: number;
  devicePrefix?: string;
}

/** One decide body: the two always-asked features plus three others; signed content; a reader. */
export function buildBody(rand: () => number, o: BodyOptions, subject: { userId?: string; deviceId?: string }): string {
  const article = pick(rand, o.articles);
  const names: string[] = [...ALWAYS_FEATURES];
  const slot = `slot_${article.section}`;
  if (o.optional.includes(slot)) names.push(slot);
  while (names.length < 5) {
    const f = pick(rand, o.optional);
    if (!names.includes(f)) names.push(f);
  }
  return JSON.stringify({
    features: names,
    content: article.content,
    context: context(rand, article.section),
    ...subject,
  });
}

/** One body per reader of the pools (every device, every user): touching each loads its meters. */
export function buildPrimeBodies(o: BodyOptions): string[] {
  const rand = prng((o.seed ?? 7) + 1_000);
  const prefix = o.devicePrefix ?? "dev";
  const out: string[] = [];
  for (let i = 0; i < o.devices; i++) out.push(buildBody(rand, o, { deviceId: `${prefix}-${i.toString(36)}` }));
  for (const userId of o.users) out.push(buildBody(rand, o, { userId }));
  return out;
}

/** Pre-generates `count` distinct bodies over the device and user pools. */
export function buildBodies(o: BodyOptions): string[] {
  const rand = prng(o.seed ?? 7);
  const out: string[] = [];
  const userShare = o.users.length > 0 ? (o.userShare ?? 0.15) : 0;
  const prefix = o.devicePrefix ?? "dev";
  for (let i = 0; i < o.count; i++) {
    const subject =
      rand() < userShare
        ? { userId: pick(rand, o.users) }
        : { deviceId: `${prefix}-${Math.floor(rand() * o.devices).toString(36)}` };
    out.push(buildBody(rand, o, subject));
  }
  return out;
}
