import { describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { basicDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { freshDatabase } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";
import { startSecondProcess } from "../helpers/second-process";

/**
 * A seen meter (`articles`: 3 a month) across two processes on one Postgres server: each process
 * admits a new article through the store, so the reader never gets more than 3 distinct articles
 * however the requests are spread. (The embedded store has one process; two harnesses sharing
 * it in one test process do over-admit, which is what these tests would catch on a server.)
 */
describe.if(Boolean(process.env.DATABASE_URL))("seen meters across processes (server store)", () => {
  const kind = "server" as const;
  const setup = async () => {
    const db = await freshDatabase(kind);
    const first = await startHarness(db);
    const { key } = await seedSite(first, "news", basicDocument());
    const second = await startSecondProcess(db, first);
    const decideOn = (h: Harness) => async (reader: string, article: string) => {
      const res = await h.request("POST", "/v1/decide", {
        headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}` },
        body: { features: ["paywall"], deviceId: reader, content: signedContent({ id: article, section: "news" }) },
      });
      expect(res.status).toBe(200);
      return (await res.json()).decisions.paywall as { outcome: string; meters?: { articles: { count: number } } };
    };
    const stored = async (reader: string) => {
      await first.deps.meters.flush();
      await second.harness.deps.meters.flush();
      const rows = rowsOf<{ n: number | string }>(
        await db.db.execute(sql`select count(*) as n from meter_seen where subject = ${reader}`),
      );
      return Number(rows[0]?.n ?? 0);
    };
    const stop = async () => {
      await second.harness.stop();
      await second.close();
      await first.stop();
      await db.drop();
    };
    return { a: decideOn(first), b: decideOn(second.harness), stored, stop };
  };

  it("never lets a reader through more distinct articles than the allowance, requests spread over both at once", async () => {
    const { a, b, stored, stop } = await setup();
    try {
      // Both processes hold the reader (nothing read yet), then ten articles arrive at once.
      expect((await a("reader-1", "warm-a")).outcome).toBe("metered");
      expect((await b("reader-1", "warm-a")).outcome).toBe("metered");
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b)("reader-1", `article-${i}`)),
      );
      const metered = answers.filter((d) => d.outcome === "metered").length;
      expect(metered).toBe(2); // warm-a took one of the three
      expect(await stored("reader-1")).toBe(3);
    } finally {
      await stop();
    }
  }, 120_000);

  it("a process holding an old view denies past the allowance, and still allows what the other admitted", async () => {
    const { a, b, stored, stop } = await setup();
    try {
      expect((await b("reader-2", "a-0")).outcome).toBe("metered"); // b holds the reader: 1 member
      expect((await a("reader-2", "a-1")).outcome).toBe("metered");
      expect((await a("reader-2", "a-2")).outcome).toBe("metered");
      // b's view has one member; the store has three. A new article is refused, with the count.
      const denied = await b("reader-2", "a-3");
      expect(denied.outcome).not.toBe("metered");
      expect(denied.meters?.articles.count).toBe(3);
      // An article the other process admitted is allowed again here, and counted once.
      expect((await b("reader-2", "a-1")).outcome).toBe("metered");
      expect(await stored("reader-2")).toBe(3);
      expect((await a("reader-2", "a-4")).outcome).not.toBe("metered");
    } finally {
      await stop();
    }
  }, 120_000);
});
