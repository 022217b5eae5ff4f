import { describe, expect, it } from "bun:test";
import { giftDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";
import { twoProcesses } from "../helpers/worlds";

/**
 * Two processes' worth of state over one store (on a server, with connections of their own):
 * A mints and revokes, B serves decide. B applies A's changes when its change feed polls; the
 * test drives that poll itself rather than waiting on a timer.
 */
describe.each(storeKinds)("gift links across processes (%s store)", (kind) => {
  let key: string;
  const w = twoProcesses(kind, async (a) => {
    ({ key } = await seedSite(a, "news", giftDocument()));
  });

  const readOn = async (h: Harness, token: string, subject: string) => {
    const res = await h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", "x-api-key": key },
      body: { features: ["paywall"], deviceId: subject, content: signedContent({ id: "shared" }), giftLink: token },
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { decisions: { paywall: { outcome: string } } }).decisions.paywall.outcome;
  };

  it("reads a link minted in another process, and stops once it is revoked there", async () => {
    const gifter = (
      (await (await w.a.admin("POST", "/admin/tenants/default/users", { email: "g@example.com" })).json()) as {
        user: { id: string };
      }
    ).user.id;
    const minted = await w.a.request("POST", "/v1/gift-links", {
      headers: { "x-svc-site-id": "news", "x-api-key": key },
      body: { userId: gifter, contentId: "shared" },
    });
    expect(minted.status).toBe(201);
    const { token, giftId } = (await minted.json()) as { token: string; giftId: string };
    expect(await readOn(w.b, token, "reader-b")).toBe("gifted");

    expect((await w.a.admin("POST", `/admin/tenants/default/sites/news/gift-links/${giftId}/revoke`)).status).toBe(200);
    expect(await readOn(w.a, token, "reader-b")).not.toBe("gifted");
    await w.b.deps.changes.poll();
    expect(await readOn(w.b, token, "reader-b")).not.toBe("gifted");
  });

  it("starts with the revocations already made (a restarted process reads them at start)", async () => {
    const gifter = (
      (await (await w.a.admin("POST", "/admin/tenants/default/users", { email: "h@example.com" })).json()) as {
        user: { id: string };
      }
    ).user.id;
    const minted = (await (
      await w.a.request("POST", "/v1/gift-links", {
        headers: { "x-svc-site-id": "news", "x-api-key": key },
        body: { userId: gifter, contentId: "shared" },
      })
    ).json()) as { token: string; giftId: string };
    expect(
      (await w.a.admin("POST", `/admin/tenants/default/sites/news/gift-links/${minted.giftId}/revoke`)).status,
    ).toBe(200);
    const c = await startHarness(w.db);
    try {
      c.clock.set(w.a.clock.now());
      expect(await readOn(c, minted.token, "reader-c")).not.toBe("gifted");
    } finally {
      await c.stop();
    }
  });
});
