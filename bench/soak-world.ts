/**
 * The soak's simulated world (bench/soak.ts, test/retention/bounded.test.ts): a reader population
 * on the demo site, driven one simulated day at a time through the app in this process with the
 * clock injected, and what the store holds after each day.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../db/client";
import { signContentPayload } from "../src/core/verifier";
import type { Deps } from "../src/deps";
import type { MailTransport } from "../src/mail/outbox";
import { demoDocumentPath, seedDemo } from "../src/seed";

export const DAY_MS = 86_400_000;

/** What one simulated day holds. */
export interface SoakMix {
  /** Readers (devices) at any time; `churn` of them are replaced by new ones each day. */
  readonly readers: number;
  readonly churn: number;
  /** Keyed decides per reader per day (`paywall`: the monthly seen meter; `recirculation`: a daily count meter). */
  readonly articlesPerReaderDay: number;
  /** Magic-link sign-ins per day (a link mailed, then consumed: a session), from `accounts` addresses. */
  readonly signInsPerDay: number;
  readonly accounts: number;
  /** Deploys of the demo document per day (each a document version and change-log entries). */
  readonly deploysPerDay: number;
  /** The seed of the day's random choices, so a run can be repeated. */
  readonly seed: number;
}

export const DEFAULT_MIX: SoakMix = {
  readers: 1000,
  churn: 0.05,
  articlesPerReaderDay: 2,
  signInsPerDay: 20,
  accounts: 200,
  deploysPerDay: 1,
  seed: 1,
};

/** The app as the world drives it: in-process requests. */
export interface SoakApp {
  handle(request: Request): Promise<Response> | Response;
}

/** Mail kept in memory: the world reads the magic links from it. */
export function mailCatcher(): MailTransport & { last(): string | undefined } {
  const texts: string[] = [];
  return {
    kind: "log",
    send: async (mail) => {
      texts.push(mail.text);
      if (texts.length > 100) texts.splice(0, texts.length - 100);
    },
    last: () => texts.at(-1),
  };
}

/** The demo site's document (docs/examples/demo-site.json), parsed afresh. */
export function demoDocument(): Record<string, unknown> {
  return JSON.parse(readFileSync(demoDocumentPath, "utf8")) as Record<string, unknown>;
}

/** mulberry32: a small seeded generator, so two runs with one seed make the same choices. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export class SoakWorld {
  private readonly random: () => number;
  private readonly population: number[];
  private nextReader = 0;
  private readonly signedIn = new Set<string>();
  private readonly document: unknown;
  private readonly contentSecret: string;

  private constructor(
    private readonly deps: Deps,
    private readonly app: SoakApp,
    private readonly clock: { now(): number; advance(ms: number): void },
    private readonly operatorToken: string,
    private readonly mail: { last(): string | undefined },
    private readonly mix: SoakMix,
    private readonly decideKey: string,
    private readonly streamingKey: string,
    document: unknown,
  ) {
    this.random = seeded(mix.seed);
    this.population = Array.from({ length: mix.readers }, () => this.nextReader++);
    this.document = document;
    const keys = (this.document as { contentKeys: { secret: string }[] }).contentKeys;
    this.contentSecret = keys[0]?.secret ?? "";
  }

  /**
   * Seeds the demo site on an empty store and issues a streaming key; `document` (the demo
   * document by default) is deployed at once and again by each day's deploys.
   */
  static async start(options: {
    deps: Deps;
    app: SoakApp;
    clock: { now(): number; advance(ms: number): void };
    operatorToken: string;
    mail: { last(): string | undefined };
    mix: SoakMix;
    document?: unknown;
  }): Promise<SoakWorld> {
    const { deps, clock } = options;
    const demo = await seedDemo(deps);
    if (demo === null) throw new Error("the soak's store was not empty");
    const streaming = await deps.keys.issue(
      "default",
      "demo",
      { name: "soak", permissions: ["streaming:write"] },
      clock.now(),
    );
    const world = new SoakWorld(
      deps,
      options.app,
      clock,
      options.operatorToken,
      options.mail,
      options.mix,
      demo.key,
      streaming.key,
      options.document ?? demoDocument(),
    );
    if (options.document !== undefined) await world.deploy();
    return world;
  }

  /** Readers now: the device population and the accounts signed in so far. */
  liveReaders(): number {
    return this.mix.readers + this.signedIn.size;
  }

  /**
   * One simulated day: churn, every reader's keyed decides, the sign-ins, a streaming batch for
   * the signed-in readers, the deploys; then the counters flush, the clock moves a day on and the
   * retention sweep runs, as its job would by then.
   */
  async day(): Promise<void> {
    await this.activity();
    await this.endDay();
  }

  /** The day's requests, all at the day's one instant. */
  async activity(): Promise<void> {
    const { mix } = this;
    for (let i = 0; i < Math.round(mix.readers * mix.churn); i++) {
      this.population[Math.floor(this.random() * mix.readers)] = this.nextReader++;
    }
    for (const reader of this.population) {
      for (let a = 0; a < mix.articlesPerReaderDay; a++) await this.decide(reader);
    }
    for (let i = 0; i < mix.signInsPerDay; i++) await this.signIn();
    await this.stream();
    for (let i = 0; i < mix.deploysPerDay; i++) await this.deploy();
  }

  /** The counters flush, the clock moves a day on and the retention sweep runs. */
  async endDay(): Promise<void> {
    await this.deps.flusher.flushAll();
    this.clock.advance(DAY_MS);
    await this.deps.retention.sweep(this.clock.now());
  }

  private async call(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
    return this.app.handle(
      new Request(`http://127.0.0.1${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-svc-site-id": "demo", ...headers },
        body: JSON.stringify(body),
      }),
    );
  }

  private async decide(reader: number): Promise<void> {
    const payload = JSON.stringify({
      id: `a-${Math.floor(this.random() * 500)}`,
      section: "news",
      access: "metered",
    });
    const res = await this.call(
      "/v1/decide",
      {
        features: ["paywall", "recirculation"],
        deviceId: `device-${reader}`,
        content: { payload, signature: signContentPayload(payload, this.contentSecret) },
      },
      { authorization: `Bearer ${this.decideKey}` },
    );
    if (res.status !== 200) throw new Error(`decide answered ${res.status}: ${await res.text()}`);
  }

  private async signIn(): Promise<void> {
    const email = `reader-${Math.floor(this.random() * this.mix.accounts)}@example.com`;
    const asked = await this.call("/v1/id/sign-in/magic-link", { email });
    // A mailbox's budget (3 links per 10 minutes) refuses a fourth; the day goes on.
    if (asked.status === 429) return;
    if (asked.status >= 300) throw new Error(`sign-in answered ${asked.status}: ${await asked.text()}`);
    await this.deps.outbox.drain();
    const token = this.mail.last()?.match(/[?&]token=([A-Za-z0-9_-]+)/)?.[1];
    const res = await this.call("/v1/id/magic-link/consume", { token });
    if (res.status !== 200) throw new Error(`consuming the link answered ${res.status}: ${await res.text()}`);
    this.signedIn.add(((await res.json()) as { user: { id: string } }).user.id);
  }

  private async stream(): Promise<void> {
    if (this.signedIn.size === 0) return;
    const windowEnd = new Date(this.clock.now()).toISOString();
    const rows = [...this.signedIn].map((user_id) => ({ user_id, window_end: windowEnd, score: this.random() }));
    const res = await this.call("/v1/streaming/engagement", { rows }, { authorization: `Bearer ${this.streamingKey}` });
    if (res.status !== 200) throw new Error(`streaming answered ${res.status}: ${await res.text()}`);
  }

  private async deploy(): Promise<void> {
    const res = await this.app.handle(
      new Request("http://127.0.0.1/admin/tenants/default/sites/demo/deploy", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${this.operatorToken}` },
        body: JSON.stringify({ document: this.document }),
      }),
    );
    if (res.status >= 300) throw new Error(`deploy answered ${res.status}: ${await res.text()}`);
  }
}

/** One table's share of the store: heap, indexes, TOAST, live rows (exact) and dead rows (Postgres' count). */
export interface TableSize {
  readonly bytes: number;
  readonly heap: number;
  readonly indexes: number;
  readonly toast: number;
  readonly rows: number;
  readonly dead: number | null;
}

export interface StoreMeasure {
  /** `pg_database_size`: every file of the database. */
  readonly databaseBytes: number;
  /** The project's tables, by name. */
  readonly tables: Record<string, TableSize>;
  /** The system catalog's tables with their indexes and TOAST (pg_statistic grows with every ANALYZE). */
  readonly catalogBytes: number;
  /** The catalog's largest tables, by name (bytes with indexes and TOAST). */
  readonly catalog: Record<string, number>;
}

/** What the store holds now, read from the catalog (exact row counts: the soak's tables are small). */
export async function measureStore(db: Db): Promise<StoreMeasure> {
  const [size] = rowsOf<{ bytes: number | string }>(
    await db.execute(sql`select pg_database_size(current_database())::float8 as bytes`),
  );
  const relations = rowsOf<{
    schema: string;
    name: string;
    total: number | string;
    heap: number | string;
    indexes: number | string;
    dead: number | string | null;
  }>(
    await db.execute(sql`select n.nspname as schema, c.relname as name,
        pg_total_relation_size(c.oid)::float8 as total, pg_relation_size(c.oid)::float8 as heap,
        pg_indexes_size(c.oid)::float8 as indexes, pg_stat_get_dead_tuples(c.oid)::float8 as dead
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relkind = 'r' and n.nspname in ('public', 'pg_catalog')`),
  );
  const tables: Record<string, TableSize> = {};
  const catalog: Record<string, number> = {};
  let catalogBytes = 0;
  for (const r of relations) {
    const total = Number(r.total);
    if (r.schema === "pg_catalog") {
      catalogBytes += total;
      if (total >= 256 * 1024) catalog[r.name] = total;
      continue;
    }
    const [count] = rowsOf<{ n: number | string }>(
      await db.execute(sql`select count(*)::float8 as n from ${sql.identifier(r.name)}`),
    );
    const heap = Number(r.heap);
    const indexes = Number(r.indexes);
    tables[r.name] = {
      bytes: total,
      heap,
      indexes,
      toast: total - heap - indexes,
      rows: Number(count?.n ?? 0),
      dead: r.dead === null ? null : Number(r.dead),
    };
  }
  return { databaseBytes: Number(size?.bytes ?? 0), tables, catalogBytes, catalog };
}

/** Bytes of a folder's files, recursively (the embedded store's data folder, WAL included). */
export function folderBytes(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + folderBytes(join(path, name)), 0);
}
