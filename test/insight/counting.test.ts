import { beforeAll, describe, expect, it } from "bun:test";
import type { DecisionsReport } from "../../src/insight/model";
import { basicDocument } from "../fixtures/documents";
import { storeKinds } from "../helpers/databases";
import { siteWorld } from "../helpers/worlds";

describe.each(storeKinds)("which decisions are counted (%s store)", (kind) => {
  const w = siteWorld({ document: basicDocument(), kind });

  beforeAll(async () => {
    expect(
      (
        await w.h.admin("POST", "/admin/tenants/default/sites/news/deploy", {
          document: basicDocument(),
          preview: true,
        })
      ).status,
    ).toBe(200);
  }, 60_000);

  const decide = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    w.h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${w.key}`, ...headers },
      body: { features: ["section"], ...body },
    });
  const counted = async (range = "1h") => {
    const res = await w.h.admin("GET", `/admin/tenants/default/sites/news/insight/decisions?range=${range}`);
    expect(res.status).toBe(200);
    const report = (await res.json()) as DecisionsReport;
    return report.series.find((s) => s.feature === "section" && s.outcome === "other")?.total ?? 0;
  };

  it("counts live keyed decisions, and neither previews, explain nor refused requests", async () => {
    const before = await counted();
    for (let i = 0; i < 3; i++) expect((await decide({})).status).toBe(200);
    expect(await counted()).toBe(before + 3);
    const token = (
      (await (await w.h.admin("POST", "/admin/tenants/default/sites/news/preview-tokens", {})).json()) as {
        token: string;
      }
    ).token;
    const preview = await decide({}, { "x-svc-preview": token });
    expect(((await preview.json()) as { preview: boolean }).preview).toBe(true);
    expect((await decide({ explain: true })).status).toBe(200);
    expect((await decide({ features: "section" })).status).toBe(422);
    expect(await counted()).toBe(before + 3);
  });

  it("refuses an unknown range (422) and an unknown site (404) in the envelope", async () => {
    const bad = await w.h.admin("GET", "/admin/tenants/default/sites/news/insight/decisions?range=2y");
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBeDefined();
    const missing = await w.h.admin("GET", "/admin/tenants/default/sites/nope/insight/funnel");
    expect(missing.status).toBe(404);
    const unauthorized = await w.h.request("GET", "/admin/tenants/default/sites/news/insight/meters");
    expect(unauthorized.status).toBe(401);
  });
});
