import type { Commands } from "../context";

/** `svc gifts ...`: a site's gift links. */
export const giftCommands: Commands = {
  "gifts report": async ({ tenant, need, call }) => {
    const [site] = need(1, "gifts report <site> [--tenant T]");
    const out = (await call("GET", `/admin/tenants/${tenant}/sites/${site}/gift-links/report`)) as {
      gifters: { gifter: string; mints: number; redemptions: number }[];
      articles: { contentId: string; mints: number; redemptions: number }[];
    };
    const lines = [
      "GIFTER\tMINTS\tREDEMPTIONS",
      ...out.gifters.map((g) => `${g.gifter}\t${g.mints}\t${g.redemptions}`),
      "",
      "ARTICLE\tMINTS\tREDEMPTIONS",
      ...out.articles.map((a) => `${a.contentId}\t${a.mints}\t${a.redemptions}`),
    ];
    return { json: out, text: lines.join("\n") };
  },
  "gifts revoke": async ({ tenant, need, call }) => {
    const [site, giftId] = need(2, "gifts revoke <site> <giftId> [--tenant T]");
    const out = await call("POST", `/admin/tenants/${tenant}/sites/${site}/gift-links/${giftId}/revoke`);
    return { json: out, text: `gift link ${decodeURIComponent(giftId ?? "")} revoked` };
  },
};
