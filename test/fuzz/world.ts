import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { basicDocument, subscribeJourney } from "../fixtures/documents";
import { freshDatabase, type StoreKind } from "../helpers/databases";
import { type FakeIdp, startFakeIdp } from "../helpers/fake-idp";
import { startFakeRecombee } from "../helpers/fake-recombee";
import { type FakeStripe, startFakeStripe } from "../helpers/fake-stripe";
import { type Harness, seedSite, startHarness } from "../helpers/harness";
import { mailbox, signIn } from "../helpers/sign-in";
import type { World } from "./route-table";

/** Small enough that a body past it is cheap to generate, large enough for 200 KB strings. */
export const FUZZ_MAX_BODY_BYTES = 256 * 1024;

/**
 * Columns a rejected request may change by design: the key listing counts every request the
 * key authenticated, including those then refused for their body (as the spec's `Requests`).
 */
const COUNTED_ANYWAY = new Set([
  "api_keys.request_count",
  "api_keys.last_used_on",
  // Every call to the recommendation engine spends the tenant's quota, refused ones included.
  "recommendation_usage.calls",
]);

/**
 * Tables a refused request may change by design. `rate_leases`: a key's rate window counts every
 * request it authenticated, refused ones included, and on a server store that count lives in
 * Postgres as quota leases (a claim when a process' chunk runs out, hand-backs on a timer).
 * `stream_slots`: the interventions streams a process holds open, written when an earlier case's
 * stream closes and renewed at every heartbeat, whatever request is being answered meanwhile.
 */
const LIMITER_TABLES = new Set(["rate_leases", "stream_slots"]);

/** The `news` site: the fixture's features plus a journey (forward) and traits (user details). */
function newsDocument() {
  const doc = basicDocument({
    gifts: { perGifterPerMonth: 1000, lifetime: "14d", redemptionsPerLink: 10 },
    catalog: {
      basic: { title: "Basic", price: 5, currency: "EUR", internal: "x" },
      offer_annual: { title: "Annual", checkout: { price: "price_annual", grant: "premium", mode: "subscription" } },
    },
    traits: {
      interests: { type: "list", values: ["politics", "sport", "culture"], retired: ["crosswords"] },
      edition: { type: "string", values: ["uk", "us"], retired: ["eu"] },
      birthYear: { type: "number" },
    },
    pipelines: {
      engagement: {
        source: "organization",
        columns: { score: "number", visits: "integer", churn_risk: "boolean", segment: "string" },
      },
    },
  });
  (doc.features as Record<string, unknown>).subscribe = subscribeJourney();
  return doc;
}

const dualDocument = () =>
  basicDocument({
    identity: {
      mode: "dual",
      signInEnabled: true,
      upstream: { audience: "news-web", signOutUrl: "https://login.example/out", cookieNames: ["idp_token"] },
    },
  });

export interface FuzzWorld {
  h: Harness;
  world: World;
  fingerprint(): Promise<Map<string, string>>;
  stop(): Promise<void>;
}

/** A fresh store and app with two sites, keys, sessions, a pending magic link, an upstream login and an operator target. */
export async function buildWorld(kind: StoreKind): Promise<FuzzWorld> {
  const db = await freshDatabase(kind);
  const idp: FakeIdp = await startFakeIdp();
  const stripe: FakeStripe = await startFakeStripe({
    secretKey: "sk_test_fuzz",
    webhookSecret: "whsec_fuzz",
    prices: ["price_annual"],
  });
  const box = mailbox();
  const h = await startHarness(db, {
    mailTransport: box.transport,
    config: { SVC_MAX_BODY_BYTES: String(FUZZ_MAX_BODY_BYTES) },
  });
  const ok = async (res: Promise<Response>) => {
    const r = await res;
    if (r.status >= 300) throw new Error(`fuzz setup: ${r.status} ${await r.text()}`);
    return r;
  };
  const { key } = await seedSite(h, "news", newsDocument(), { permissions: ["streaming:write"] });
  await seedSite(h, "dual", dualDocument());
  await ok(h.admin("PUT", "/admin/tenants/default/identity-provider", { issuer: idp.issuer, jwksUrl: idp.jwksUrl }));
  await ok(
    h.admin("PUT", "/admin/tenants/default/services/stripe", {
      secretKey: "sk_test_fuzz",
      webhookSecret: "whsec_fuzz",
      apiBase: stripe.apiBase,
    }),
  );
  // A recommendation engine for the tenant, and its month's usage row (later calls only count).
  const engine = startFakeRecombee("fuzz-db", "fuzz-engine-token");
  engine.state.catalog = ["article-1", "article-2"];
  await ok(
    h.admin("PUT", "/admin/tenants/default/services/recombee", {
      databaseId: "fuzz-db",
      token: "fuzz-engine-token",
      baseUri: engine.baseUri,
    }),
  );
  await ok(h.request("GET", "/v1/recommendations?userId=fuzz-setup", { headers: { "x-api-key": key } }));

  const reader = await signIn(h, box, "reader@example.com");
  const spare = await signIn(h, box, "leaver@example.com");
  await ok(
    h.request("POST", "/v1/id/sign-in/magic-link", {
      headers: { "x-svc-site-id": "news" },
      body: { email: "pending@example.com" },
    }),
  );
  await h.deps.outbox.drain();
  const magicToken = box.lastToken();

  const subject = "sub-fuzz";
  const upstreamToken = await idp.token(
    { sub: subject, email: "upstream@example.com", email_verified: true },
    { nowMs: h.clock.now(), expiresAtSeconds: Math.floor(h.clock.now() / 1000) + 30 * 86_400 },
  );
  await ok(
    h.request("POST", "/v1/id/session/exchange", {
      headers: { "x-svc-site-id": "dual" },
      body: { subject_token: upstreamToken },
    }),
  );

  const gift = await (
    await ok(
      h.request("POST", "/v1/gift-links", {
        headers: { "x-svc-site-id": "news", "x-api-key": key },
        body: { userId: reader.userId, contentId: "article-1" },
      }),
    )
  ).json();

  const tenant = "fuzz";
  const site = "target";
  await ok(h.admin("POST", "/admin/tenants", { id: tenant }));
  await ok(h.admin("POST", `/admin/tenants/${tenant}/sites`, { id: site }));
  await ok(h.admin("POST", `/admin/tenants/${tenant}/sites/${site}/deploy`, { document: basicDocument() }));
  const issued = await (await ok(h.admin("POST", `/admin/tenants/${tenant}/sites/${site}/keys`, { name: "k" }))).json();
  const user = await (
    await ok(h.admin("POST", `/admin/tenants/${tenant}/users`, { email: "operator-target@example.com" }))
  ).json();
  await ok(h.admin("POST", `/admin/tenants/${tenant}/users/${user.user.id}/grants`, { grant: "premium" }));

  const world: World = {
    key,
    cookie: reader.cookie,
    sessionToken: reader.token,
    spareCookie: spare.cookie,
    magicToken,
    upstreamToken,
    subject,
    admin: { tenant, site, keyId: issued.id, userId: user.user.id, grant: "premium" },
    gifter: reader.userId,
    giftId: gift.giftId,
  };

  // The suite flushes and drains by hand between requests, so nothing writes behind its back.
  h.deps.flusher.stop();
  await h.deps.outbox.stop();
  await h.deps.flusher.flushAll();
  await h.deps.outbox.drain();

  const tables = await hashedTables(h);
  await markWrites(h, tables);
  /** What the last hashing found, table by table. */
  let hashed: Map<string, string> | null = null;
  return {
    h,
    world,
    async fingerprint() {
      // Only the tables a committed statement may have written to since the last hashing.
      const dirty = rowsOf<{ t: string }>(
        await h.deps.database.db.execute(sql.raw("delete from fuzz_dirty returning t")),
      ).map((r) => r.t);
      const again = hashed === null ? [...tables.keys()] : dirty.filter((t) => tables.has(t));
      if (hashed !== null && again.length === 0) return hashed;
      const query = again.map((t) => hashOf(t, tables.get(t) as string[])).join(" union all ");
      const rows = rowsOf<{ t: string; h: string }>(await h.deps.database.db.execute(sql.raw(query)));
      // A new map each time: the suite compares the one before a request with the one after.
      hashed = new Map([...(hashed ?? []), ...rows.map((r): [string, string] => [r.t, r.h])]);
      return hashed;
    },
    async stop() {
      await h.stop();
      await idp.stop();
      await stripe.stop();
      engine.stop();
      await db.drop();
    },
  };
}

/**
 * A statement trigger on each hashed table marks it in `fuzz_dirty` (in the writer's own
 * transaction, so a rolled-back write leaves no mark, as it leaves no change), where an insert,
 * delete, truncate or update of a hashed column ran. The fingerprint hashes again only the
 * tables marked since the last one: hashing every table after every case was most of a case's
 * time, and most cases write nothing or one table.
 */
async function markWrites(h: Harness, tables: ReadonlyMap<string, readonly string[]>): Promise<void> {
  const statements = [
    "create unlogged table fuzz_dirty (t text primary key)",
    "create function fuzz_wrote() returns trigger language plpgsql as $$ begin " +
      "insert into fuzz_dirty values (TG_TABLE_NAME) on conflict do nothing; return null; end $$",
    ...[...tables].map(
      ([t, columns]) =>
        `create trigger fuzz_wrote after insert or delete or truncate or update of ${columns.join(", ")} on "${t}" ` +
        "for each statement execute function fuzz_wrote()",
    ),
  ];
  for (const statement of statements) await h.deps.database.db.execute(sql.raw(statement));
}

/** One table's rows, counted and hashed. */
const hashOf = (table: string, columns: readonly string[]) =>
  `select '${table}' as t, count(*)::text || ':' || coalesce(md5(string_agg(x, E'\\n' order by x)), '') as h ` +
  `from (select row(${columns.join(", ")})::text as x from "${table}") s`;

/** Every table's hashed columns (quoted), drizzle's own bookkeeping and what may change by design aside. */
async function hashedTables(h: Harness): Promise<Map<string, string[]>> {
  const columns = rowsOf<{ table_name: string; column_name: string }>(
    await h.deps.database.db.execute(
      sql.raw(
        "select c.table_name, c.column_name from information_schema.columns c " +
          "join pg_tables p on p.schemaname = c.table_schema and p.tablename = c.table_name " +
          "where c.table_schema = 'public' and c.table_name not like '%drizzle%' " +
          "order by c.table_name, c.ordinal_position",
      ),
    ),
  );
  const byTable = new Map<string, string[]>();
  for (const { table_name: t, column_name: c } of columns) {
    if (COUNTED_ANYWAY.has(`${t}.${c}`) || LIMITER_TABLES.has(t)) continue;
    byTable.set(t, [...(byTable.get(t) ?? []), `"${c}"`]);
  }
  return byTable;
}
