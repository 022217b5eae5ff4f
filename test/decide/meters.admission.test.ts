import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { DrizzleMeterStore } from "../../src/counters/drizzle-meter-store";
import type { MeterName, SeenAdmission } from "../../src/counters/meter-store";
import { ADMISSION_ROUNDS } from "../../src/decide/service";
import { basicDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

/**
 * The product's store, with its admissions counted and, while `refusing`, met by an allowance
 * already filled: what a reader's requests meet when other processes admit articles to them
 * between every read and admission of this one. The refusal is the real statement's (run with no
 * room left), on the real database.
 */
class CountingStore extends DrizzleMeterStore {
  admissions = 0;
  countAdmissions = 0;
  refusing = false;

  override admitSeen(name: MeterName, subject: string, item: string, allowance: number): Promise<SeenAdmission> {
    this.admissions += 1;
    return super.admitSeen(name, subject, item, this.refusing ? 0 : allowance);
  }

  override admitCount(name: MeterName, subject: string, allowance: number): Promise<SeenAdmission> {
    this.countAdmissions += 1;
    return super.admitCount(name, subject, this.refusing ? 0 : allowance);
  }
}

describe.each(storeKinds)("meters' admissions through the store (%s store)", (kind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: Harness;
  let key: string;
  let store: CountingStore;

  beforeAll(async () => {
    db = await freshDatabase(kind);
    store = new CountingStore(db.db);
    h = await startHarness(db, { meterStore: store });
    ({ key } = await seedSite(h, "news", basicDocument()));
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await db.drop();
  }, 60_000);

  const decide = (reader: string, article: string) =>
    h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}` },
      body: { features: ["paywall"], deviceId: reader, content: signedContent({ id: article, section: "news" }) },
    });
  const teaser = async (reader: string) => {
    const res = await h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}` },
      body: { features: ["teaser"], deviceId: reader },
    });
    expect(res.status).toBe(200);
    return (await res.json()).decisions.teaser.outcome as string;
  };
  const storedCount = async (reader: string) => {
    await h.deps.meters.flush();
    const rows = rowsOf<{ count: number | string }>(
      await db.db.execute(sql`select count from meter_counts where subject = ${reader}`),
    );
    return Number(rows[0]?.count ?? 0);
  };
  const paywall = async (res: Response) => {
    expect(res.status).toBe(200);
    return (await res.json()).decisions.paywall as { outcome: string; meters?: { articles: { count: number } } };
  };
  const stored = async (reader: string) => {
    await h.deps.meters.flush();
    const rows = rowsOf<{ n: number | string }>(
      await db.db.execute(sql`select count(*) as n from meter_seen where subject = ${reader}`),
    );
    return Number(rows[0]?.n ?? 0);
  };

  it(
    kind === "server"
      ? "admits each new article through the store before answering, and nothing already read"
      : "never asks the store to admit: one process owns the database",
    async () => {
      store.admissions = 0;
      expect((await paywall(await decide("reader-1", "a-1"))).outcome).toBe("metered");
      expect((await paywall(await decide("reader-1", "a-1"))).outcome).toBe("metered");
      // Answers show the count before the request's own tick.
      expect((await paywall(await decide("reader-1", "a-2"))).meters?.articles.count).toBe(1);
      expect(store.admissions).toBe(kind === "server" ? 2 : 0);
      expect(await stored("reader-1")).toBe(2);
    },
  );

  // Only a server store admits (the embedded store never refuses): not registered on the other.
  const serverOnly = kind === "server" ? it : () => {};
  serverOnly("answers 503 in the error envelope after the store refused every round, and ticks nothing", async () => {
    expect((await paywall(await decide("reader-2", "b-1"))).meters?.articles.count).toBe(0);
    store.admissions = 0;
    store.refusing = true;
    let res: Response;
    try {
      res = await decide("reader-2", "b-2");
    } finally {
      store.refusing = false;
    }
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("2");
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("service_unavailable");
    expect(typeof body.error.message).toBe("string");
    // The first evaluation, then one per round: each refused, each read the reader again.
    expect(store.admissions).toBe(1 + ADMISSION_ROUNDS);
    // Nothing ticked: neither stored nor held (the next answer counts only b-1 before it).
    expect(await stored("reader-2")).toBe(1);
    const after = await paywall(await decide("reader-2", "b-2"));
    expect(after.outcome).toBe("metered");
    expect(after.meters?.articles.count).toBe(1);
    expect(await stored("reader-2")).toBe(2);
  });

  it(
    kind === "server"
      ? "admits each call of a count meter below its allowance through the store, none past it"
      : "never asks the store to admit a count meter's call",
    async () => {
      store.countAdmissions = 0;
      expect([await teaser("caller-1"), await teaser("caller-1"), await teaser("caller-1")]).toEqual([
        "on",
        "on",
        "off",
      ]);
      expect(store.countAdmissions).toBe(kind === "server" ? 2 : 0);
      expect(await storedCount("caller-1")).toBe(2);
    },
  );

  serverOnly(
    "reads a count meter the store refuses as spent: the call is answered off, not 503, and ticks nothing",
    async () => {
      expect(await teaser("caller-2")).toBe("on");
      store.countAdmissions = 0;
      store.refusing = true;
      let outcome: string;
      try {
        outcome = await teaser("caller-2");
      } finally {
        store.refusing = false;
      }
      expect(outcome).toBe("off");
      // One refused admission, then the evaluation again reads the allowance spent: no second one.
      expect(store.countAdmissions).toBe(1);
      expect(await storedCount("caller-2")).toBe(1);
    },
  );
});
