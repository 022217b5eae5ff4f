import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";
import { newUser, postRows, stored, streamingDocument } from "./fixture";

const T0 = Date.parse("2026-11-21T10:00:00Z");

describe.each(storeKinds)("streaming writes need a streaming:write key of the site (%s store)", (kind) => {
  let h: Harness;
  let drop: () => Promise<void>;
  let writer: string;
  let writerId: string;
  let plain: string;
  let otherWriter: string;
  let u: string;
  const rows = () => ({ rows: [{ user_id: u, window_end: T0, score: 1 }] });
  const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; message: string } }).error;

  beforeAll(async () => {
    const db = await freshDatabase(kind);
    drop = db.drop;
    h = await startHarness(db);
    ({ key: writer, keyId: writerId } = await seedSite(h, "news", streamingDocument(), {
      permissions: ["streaming:write"],
    }));
    const issued = await h.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "decide only" });
    plain = ((await issued.json()) as { key: string }).key;
    ({ key: otherWriter } = await seedSite(h, "sport", streamingDocument(), { permissions: ["streaming:write"] }));
    u = await newUser(h, "secure@example.com");
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await drop();
  }, 60_000);

  it("answers 403 to a key without streaming:write, with the spec's message", async () => {
    const res = await postRows(h, plain, "engagement", rows());
    expect(res.status).toBe(403);
    expect(await errorOf(res)).toMatchObject({ code: "forbidden", message: "This key does not hold streaming:write." });
    expect(await stored(h, u)).toBeUndefined();
  });

  it("answers 401 with no key, an unknown key, or a bearer that is no key", async () => {
    const none = await h.request("POST", "/v1/streaming/engagement", { body: rows() });
    expect(none.status).toBe(401);
    expect(await errorOf(none)).toMatchObject({ code: "unauthorized", message: "Missing API key." });
    const presented: Record<string, string>[] = [{ "x-api-key": "svc_unknown" }, { authorization: "Basic abc" }];
    for (const headers of presented) {
      const res = await h.request("POST", "/v1/streaming/engagement", { headers, body: rows() });
      expect(res.status).toBe(401);
      expect(await errorOf(res)).toMatchObject({ code: "unauthorized", message: "Invalid or missing API key." });
    }
    expect(await stored(h, u)).toBeUndefined();
  });

  it("writes to the key's own site, with or without a site header naming it", async () => {
    expect((await postRows(h, writer, "engagement", rows())).status).toBe(200);
    expect((await postRows(h, writer, "engagement", rows(), { "x-svc-site-id": "news" })).status).toBe(200);
    expect((await stored(h, u))?.values).toEqual({ score: 1 });
    // Another site's key writes to its own site only.
    expect((await postRows(h, otherWriter, "engagement", rows())).status).toBe(200);
    const sport = await h.deps.streamingStore.rowsOf("default", "sport", [u]);
    expect(sport.map((r) => r.pipeline)).toEqual(["engagement"]);
  });

  it("answers 403 when a site header names a site other than the key's pin", async () => {
    for (const site of ["sport", "nowhere", ""]) {
      const res = await postRows(h, writer, "engagement", rows(), { "x-svc-site-id": site });
      expect(res.status).toBe(403);
      expect(await errorOf(res)).toMatchObject({
        code: "forbidden",
        message: "This key is not pinned to the selected site.",
      });
    }
  });

  it("answers 401 to a revoked key", async () => {
    expect((await h.admin("POST", `/admin/tenants/default/sites/news/keys/${writerId}/revoke`)).status).toBeLessThan(
      300,
    );
    const res = await postRows(h, writer, "engagement", rows());
    expect(res.status).toBe(401);
  });

  it("is not served under the /svc mount", async () => {
    const res = await h.request("POST", "/svc/v1/streaming/engagement", {
      headers: { "x-api-key": otherWriter },
      body: rows(),
    });
    expect(res.status).toBe(404);
  });
});
