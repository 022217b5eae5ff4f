import { readFileSync } from "node:fs";
import { join } from "node:path";
import { runInsightTraffic } from "../../scripts/insight-traffic";
import { connectStripe, SECRET_KEY, WEBHOOK_SECRET } from "../checkout/setup";
import { type FakeStripe, startFakeStripe } from "../helpers/fake-stripe";
import { type Harness, OPERATOR_TOKEN } from "../helpers/harness";

/** The demo site's document (docs/examples/demo-site.json). */
export const demo = JSON.parse(
  readFileSync(join(import.meta.dir, "..", "..", "docs", "examples", "demo-site.json"), "utf8"),
);

/** A fake Stripe selling the demo site's prices, connected to the harness's default tenant. */
export async function startDemoStripe(h: Harness): Promise<FakeStripe> {
  const stripe = await startFakeStripe({
    secretKey: SECRET_KEY,
    webhookSecret: WEBHOOK_SECRET,
    prices: ["price_demo_monthly", "price_demo_annual", "price_demo_pass"],
  });
  await connectStripe(h, stripe);
  return stripe;
}

/**
 * runInsightTraffic on the demo site served at `base`: `readers` readers over 7 articles, 60% of
 * buyers annual and 30% monthly, half of checkouts abandoned, on the harness's clock.
 */
export function demoTraffic(
  h: Harness,
  run: { base: string; key: string; stripe: FakeStripe; readers: number; runId: string },
) {
  return runInsightTraffic({
    base: run.base,
    operatorToken: OPERATOR_TOKEN,
    key: run.key,
    tenant: "default",
    site: "demo",
    origin: demo.allowedOrigins[0],
    contentSecret: demo.contentKeys[0].secret,
    readers: run.readers,
    articles: 7,
    buyPercent: { annual: 60, monthly: 30 },
    abandonPercent: 50,
    stripe: run.stripe,
    runId: run.runId,
    now: h.clock.now,
  });
}
