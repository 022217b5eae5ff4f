import type { Commands } from "../context";

/** `svc content ...`: a site's content items as last read from the CMS. */
export const contentCommands: Commands = {
  "content get": async ({ tenant, need, call }) => {
    const [site, id] = need(2, "content get <site> <id> [--tenant T]");
    const out = (await call("GET", `/admin/tenants/${tenant}/sites/${site}/content/${id}`)) as { item: unknown };
    return { json: out, text: JSON.stringify(out.item, null, 2) };
  },
  "content stats": async ({ tenant, need, call }) => {
    const [site] = need(1, "content stats <site> [--tenant T]");
    const out = (await call("GET", `/admin/tenants/${tenant}/sites/${site}/content`)) as {
      items: number;
      deleted: number;
      queue: { depth: number; dead: number; oldest: string | null };
    };
    const q = out.queue;
    return {
      json: out,
      text: `items\t${out.items}\ndeleted\t${out.deleted}\nqueued\t${q.depth}\ndead\t${q.dead}\noldest\t${q.oldest ?? "-"}`,
    };
  },
};
