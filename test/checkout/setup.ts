import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { checkoutDocument } from "../fixtures/documents";
import { freshDatabase, type StoreKind } from "../helpers/databases";
import { type FakeStripe, startFakeStripe } from "../helpers/fake-stripe";
import { type Harness, seedSite, serveHarness, startHarness } from "../helpers/harness";
import { mailbox } from "../helpers/sign-in";

export const ORIGIN = "https://news.example";
export const SECRET_KEY = "sk_test_checkout_0123456789";
export const WEBHOOK_SECRET = "whsec_test_checkout_0123456789";

/** A harness listening on 127.0.0.1, a fake Stripe connected for tenant `default`, and site `news`. */
export async function startCheckoutWorld(kind: StoreKind, config: Record<string, string> = {}) {
  const db = await freshDatabase(kind);
  const box = mailbox();
  const h = await startHarness(db, {
    mailTransport: box.transport,
    config: { SVC_ACCESS_LOG: "1", SVC_PAYMENT_TIMEOUT_MS: "400", ...config },
  });
  const { key } = await seedSite(h, "news", checkoutDocument());
  const stripe = await startFakeStripe({
    secretKey: SECRET_KEY,
    webhookSecret: WEBHOOK_SECRET,
    prices: ["price_annual", "price_pass"],
  });
  await connectStripe(h, stripe);
  const server = serveHarness(h);
  const base = server.base;
  return {
    h,
    db,
    box,
    key,
    stripe,
    base,
    async stop() {
      await server.stop();
      await stripe.stop();
      await h.stop();
      await db.drop();
    },
  };
}

export type CheckoutWorld = Awaited<ReturnType<typeof startCheckoutWorld>>;

export async function connectStripe(h: Harness, stripe: FakeStripe): Promise<void> {
  const res = await h.admin("PUT", "/admin/tenants/default/services/stripe", {
    secretKey: SECRET_KEY,
    webhookSecret: WEBHOOK_SECRET,
    apiBase: stripe.apiBase,
  });
  if (res.status !== 200) throw new Error(`stripe settings refused: ${res.status}`);
}

/** Every row of every table of the public schema, as text: to show a value was never stored. */
export async function everyStoredRow(world: CheckoutWorld): Promise<string> {
  const tables = rowsOf<{ name: string }>(
    await world.db.db.execute(
      sql`select table_name as name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'`,
    ),
  );
  let out = "";
  for (const { name } of tables) {
    const rows = rowsOf<{ row: string }>(
      await world.db.db.execute(sql`select row_to_json(t)::text as row from ${sql.identifier(name)} t`),
    );
    for (const r of rows) out += `${name}: ${r.row}\n`;
  }
  return out;
}
