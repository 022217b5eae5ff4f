import { describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { MAX_ARTICLE_ID_LENGTH } from "../../src/core/verifier";
import { errorResponseOf } from "../../src/http/error-envelope";
import { errorText } from "../../src/infra/error-text";
import { basicDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { storeKinds } from "../helpers/databases";
import { memoryLogger } from "../helpers/harness";
import { siteWorld } from "../helpers/worlds";

/** Text that does not compress (Postgres compresses a repetitive index row below its limit). */
function randomText(length: number, alphabet: string): string {
  let out = "";
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(Math.random() * alphabet.length)];
  return out;
}
const HEX = "0123456789abcdef";
/** Three UTF-8 bytes each, one UTF-16 unit: the most bytes a length bound lets through. */
const CJK = Array.from({ length: 256 }, (_, i) => String.fromCharCode(0x4e00 + i)).join("");

describe.each(storeKinds)("ids that reach an index are bounded at the edge (%s store)", (kind) => {
  const w = siteWorld({ kind, document: basicDocument() });
  const headers = () => ({ "x-svc-site-id": "news", authorization: `Bearer ${w.key}` });
  const decide = (body: Record<string, unknown>) =>
    w.h.request("POST", "/v1/decide", { headers: headers(), body: { features: ["paywall"], ...body } });
  const seenRows = async () =>
    rowsOf<{ n: number }>(await w.db.db.execute(sql`select count(*)::int as n from meter_seen`))[0]?.n ?? 0;

  it("refuses a signed descriptor whose id is 16,000 characters with 422, counting and logging nothing of it", async () => {
    const articleId = randomText(16_000, HEX);
    const subject = `reader-${randomText(20, HEX)}`;
    const linesBefore = w.h.logger.lines.length;
    const seenBefore = await seenRows();
    for (const body of [{}, { explain: true }]) {
      const res = await decide({ userId: subject, content: signedContent({ id: articleId }), ...body });
      expect(res.status).toBe(422);
      expect((await res.json()).error).toMatchObject({
        code: "validation_failed",
        message: "The request failed validation.",
        details: [{ path: "/content/payload", message: `its id must be at most ${MAX_ARTICLE_ID_LENGTH} characters` }],
      });
    }
    // Nothing was ticked: the reader's first ordinary article still finds the meter untouched.
    const next = await decide({ userId: subject, content: signedContent({ id: "story-1" }) });
    expect(next.status).toBe(200);
    expect((await next.json()).decisions.paywall.meters.articles).toEqual({ allowance: 3, count: 0 });
    await w.h.deps.flusher.flushAll();
    expect(await seenRows()).toBe(seenBefore + 1);
    const logged = w.h.logger.lines.slice(linesBefore).join("\n");
    expect(logged).not.toContain(articleId.slice(0, 64));
    expect(logged).not.toContain(subject);
    expect(logged).not.toContain("refused by the store");
  });

  it("counts an article id at the bound with the longest subject, in the costliest characters, with no refusal", async () => {
    const articleId = randomText(MAX_ARTICLE_ID_LENGTH, CJK);
    const subject = randomText(128, CJK);
    const linesBefore = w.h.logger.lines.length;
    const seenBefore = await seenRows();
    for (let i = 0; i < 2; i++) {
      const res = await decide({ userId: subject, content: signedContent({ id: articleId }) });
      expect(res.status).toBe(200);
      // The same article twice counts once: it is stored, not let through.
      expect((await res.json()).decisions.paywall.meters.articles.count).toBe(i);
    }
    await w.h.deps.flusher.flushAll();
    expect(await seenRows()).toBe(seenBefore + 1);
    const logged = w.h.logger.lines.slice(linesBefore).join("\n");
    expect(logged).not.toContain("refused by the store");
    expect(logged).not.toContain("unexpected error");
  });

  it("answers an id one past the bound with 422 too", async () => {
    const res = await decide({
      userId: "edge-reader",
      content: signedContent({ id: randomText(MAX_ARTICLE_ID_LENGTH + 1, HEX) }),
    });
    expect(res.status).toBe(422);
  });
});

describe("a failed query is logged without the values it was sent", () => {
  /** What drizzle throws: its message carries the statement and every parameter. */
  const queryError = (params: unknown[]) => {
    const cause = Object.assign(
      new Error('invalid input syntax for type uuid: "SECRET-SUBJECT"\nDETAIL: more SECRET-SUBJECT'),
      { code: "22P02" },
    );
    return Object.assign(
      new Error(`Failed query: insert into meter_seen (subject, item) values ($1, $2)\nparams: ${params.join(",")}`),
      { query: "insert into meter_seen (subject, item) values ($1, $2)", params, cause },
    );
  };

  it("keeps the SQLSTATE, the statement and the reason, masking every quoted value", () => {
    expect(errorText(queryError(["SECRET-SUBJECT", "SECRET-ARTICLE"]))).toBe(
      'query failed (SQLSTATE 22P02): invalid input syntax for type uuid: "…" [insert into meter_seen (subject, item) values ($1, $2)]',
    );
    expect(errorText(new TypeError("plain"))).toBe("TypeError: plain");
  });

  it("answers 500 with a request id and logs neither the parameters nor the message in the stack", async () => {
    const logger = memoryLogger();
    const res = errorResponseOf(
      logger,
      new Request("http://localhost/v1/decide", { method: "POST" }),
      queryError(["SECRET-SUBJECT", "SECRET-ARTICLE"]),
    );
    expect(res.status).toBe(500);
    const logged = logger.lines.join("\n");
    expect(logged).toContain("SQLSTATE 22P02");
    expect(logged).not.toContain("SECRET");
  });
});
