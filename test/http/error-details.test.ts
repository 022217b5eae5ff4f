import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { Elysia, t } from "elysia";
import { jsonApi } from "../../src/http/error-plugins";
import { safePointer } from "../../src/http/safe-pointer";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, memoryLogger, seedSite, startHarness } from "../helpers/harness";
import { mailbox, signIn } from "../helpers/sign-in";

/** A member name that is data: the card number a careless client put in a body. */
const CARD = "4242424242424242";

describe("safePointer keeps the schema's own member names and indices only", () => {
  const schema = t.Object({
    name: t.String(),
    tags: t.Array(t.String()),
    pair: t.Tuple([t.String(), t.Number()]),
    traits: t.Record(t.String(), t.Unknown()),
    either: t.Union([t.Object({ a: t.String() }), t.Object({ b: t.Object({ c: t.String() }) })]),
    open: t.Unknown(),
    "a/b": t.String(),
  });
  it.each([
    ["/", "/", false],
    ["/name", "/name", false],
    ["/tags/3", "/tags/3", false],
    ["/pair/1", "/pair/1", false],
    ["/either/b/c", "/either/b/c", false],
    ["/a~1b", "/a~1b", false],
    [`/${CARD}`, "/", true],
    [`/traits/${CARD}`, "/traits", true],
    [`/traits/${CARD}/deeper`, "/traits", true],
    [`/open/${CARD}`, "/open", true],
    [`/tags/${CARD}x`, "/tags", true],
    [`/either/${CARD}`, "/either", true],
    ["/name/0", "/name", true],
  ] as const)("%s -> %s", (pointer, path, cut) => {
    expect(safePointer(schema, pointer)).toEqual({ path, cut });
  });
});

describe("the envelope's validation details (Elysia's checks)", () => {
  const app = new Elysia()
    .use(jsonApi({ config: { maxBodyBytes: 10_000 }, logger: memoryLogger() }))
    .post("/scores", () => "ok", { body: t.Object({ scores: t.Record(t.String(), t.Number()), name: t.String() }) });
  const post = (body: unknown) =>
    app.handle(
      new Request("http://localhost/scores", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );

  it("names a record's parent and the rule, never the key the caller chose", async () => {
    const res = await post({ scores: { [CARD]: "high" }, name: 7 });
    expect(res.status).toBe(422);
    const text = await res.text();
    expect(text).not.toContain(CARD);
    expect(JSON.parse(text).error.details).toEqual([
      { path: "/scores", message: "has a member that fails: Expected number" },
      { path: "/name", message: "Expected string" },
    ]);
  });
});

describe.each(storeKinds)("error details never echo a member name the caller chose (%s store)", (kind) => {
  const box = mailbox();
  const w = {} as { h: Harness; key: string; drop: () => Promise<void> };
  beforeAll(async () => {
    const db = await freshDatabase(kind);
    w.drop = db.drop;
    w.h = await startHarness(db, { mailTransport: box.transport });
    const document = basicDocument({ traits: { edition: { type: "string", values: ["uk", "us"] } } });
    ({ key: w.key } = await seedSite(w.h, "news", document));
  }, 60_000);
  afterAll(async () => {
    await w.h.stop();
    await w.drop();
  }, 60_000);

  const answer = async (res: Response) => {
    const text = await res.text();
    expect(text).not.toContain(CARD);
    return JSON.parse(text).error as { code: string; details?: unknown };
  };

  it("names the parent of unstorable text under a member the caller named (the body's parse stage)", async () => {
    const who = await signIn(w.h, box, "nul@example.com");
    const res = await w.h.request("PATCH", "/v1/id/user-details", {
      headers: { "x-svc-site-id": "news", cookie: who.cookie },
      body: { userTraits: { [CARD]: "a\u0000b" } },
    });
    expect(res.status).toBe(422);
    const error = await answer(res);
    expect(error.details).toEqual([
      {
        path: "/userTraits",
        message: "has a member that fails: must not contain NUL characters or unpaired surrogates",
      },
    ]);
    // A declared member keeps its own path.
    const named = await w.h.request("PATCH", "/v1/id/user-details", {
      headers: { "x-svc-site-id": "news", cookie: who.cookie },
      body: { name: "a\u0000b" },
    });
    expect((await answer(named)).details).toEqual([
      { path: "/name", message: "must not contain NUL characters or unpaired surrogates" },
    ]);
  });

  it("answers a stray top-level member holding unstorable text at the root, on a key-only route", async () => {
    const res = await w.h.request("POST", "/v1/content/sync", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${w.key}` },
      body: { events: [], [CARD]: "\u0000" },
    });
    expect(res.status).toBe(422);
    expect((await answer(res)).details).toEqual([
      { path: "/", message: "has a member that fails: must not contain NUL characters or unpaired surrogates" },
    ]);
  });
});
