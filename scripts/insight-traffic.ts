/**
 * A scripted run of traffic on the demo site whose counts are known, then the insight reports
 * compared with them (docs/insight.md): readers read articles through the keyed decide (the
 * `articles` meter, then the wall, where the `paywall_offer` experiment picks the offer), some
 * walled readers start a checkout at a fake payment provider on 127.0.0.1 and most of those
 * complete it (a signed webhook), more often in one variant than the other. The reports are read
 * before and after, and their differences must equal what the script counted, exactly.
 *
 *   npm start                                  # the demo, in another terminal
 *   bun scripts/insight-traffic.ts             # readers=400 articles=8; exits 1 on a mismatch
 *
 * It reconfigures the demo tenant's payment provider to point at its own fake (demo only).
 * Environment: SVC_URL, SVC_OPERATOR_TOKEN or $SVC_DATA_DIR/operator-token, SVC_KEY or
 * $SVC_DATA_DIR/demo-key, READERS, ARTICLES.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { signContentPayload } from "../src/core/verifier";
import type { DecisionsReport, ExperimentsReport, FunnelReport, MetersReport } from "../src/insight/model";
import { type FakeStripe, startFakeStripe } from "../test/helpers/fake-stripe";

export interface TrafficOptions {
  readonly base: string;
  readonly operatorToken: string;
  /** An API key of the site. */
  readonly key: string;
  readonly tenant: string;
  readonly site: string;
  /** An origin the site's document allows (checkout refuses others). */
  readonly origin: string;
  /** The site's content key secret (descriptors are signed with it). */
  readonly contentSecret: string;
  readonly readers: number;
  readonly articles: number;
  /** Percent of each variant's walled readers who buy (the experiment's known difference). */
  readonly buyPercent: Readonly<Record<string, number>>;
  /** Percent of the other walled readers who start a checkout and abandon it. */
  readonly abandonPercent: number;
  readonly stripe: FakeStripe;
  /** Distinguishes this run's readers and articles from earlier runs. */
  readonly runId: string;
  readonly log?: (line: string) => void;
  /** The server's clock, for the webhook's signed timestamp (default Date.now). */
  readonly now?: () => number;
}

/** What the script produced, in the reports' terms. */
export interface Expected {
  decisions: Record<string, number>;
  funnel: Record<string, { walled: number; started: number; completed: number; granted: number }>;
  exposures: Record<string, number>;
  conversions: Record<string, number>;
  /** Readers added at each value of the `articles` meter. */
  meterValues: Record<string, number>;
}

export interface TrafficResult {
  readonly expected: Expected;
  readonly observed: Expected;
  readonly mismatches: string[];
  readonly after: Reports;
}

export interface Reports {
  decisions: DecisionsReport;
  funnel: FunnelReport;
  experiments: ExperimentsReport;
  meters: MetersReport;
}

const RANGE = "7d";

export async function runInsightTraffic(o: TrafficOptions): Promise<TrafficResult> {
  const log = o.log ?? (() => {});
  const before = await reports(o);
  const expected: Expected = { decisions: {}, funnel: {}, exposures: {}, conversions: {}, meterValues: {} };
  const add = (r: Record<string, number>, k: string, n = 1) => {
    r[k] = (r[k] ?? 0) + n;
  };
  const funnelOf = (offer: string) => {
    expected.funnel[offer] ??= { walled: 0, started: 0, completed: 0, granted: 0 };
    return expected.funnel[offer];
  };

  interface Walled {
    email: string;
    userId: string;
    variant: string;
    offer: string;
  }
  const walled: Walled[] = [];
  for (let i = 0; i < o.readers; i++) {
    const email = `reader-${o.runId}-${i}@insight.example`;
    const user = (await admin(o, "POST", `/admin/tenants/${o.tenant}/users`, { email })) as { user: { id: string } };
    const userId = user.user.id;
    let metered = 0;
    let wall: Walled | null = null;
    for (let a = 0; a < o.articles; a++) {
      const payload = JSON.stringify({ id: `${o.runId}-article-${a}`, section: "news", access: "metered" });
      const answer = (await send(o, `${o.base}/v1/decide`, {
        method: "POST",
        headers: { authorization: `Bearer ${o.key}`, "x-svc-site-id": o.site, "content-type": "application/json" },
        body: JSON.stringify({
          features: ["paywall"],
          userId,
          content: { payload, signature: signContentPayload(payload, o.contentSecret) },
        }),
      })) as {
        decisions: { paywall: { outcome: string; type?: string; fields?: { checkoutOffer?: unknown } } };
        exposures: { data: { experiment: string; variant: string } }[];
      };
      const d = answer.decisions.paywall;
      const exposure = answer.exposures.find((e) => e.data.experiment === "paywall_offer");
      add(expected.decisions, `paywall|${d.outcome}|${exposure?.data.variant ?? ""}`);
      if (exposure !== undefined) add(expected.exposures, exposure.data.variant);
      if (d.outcome === "metered") metered++;
      if (d.type === "deny") {
        const offer = typeof d.fields?.checkoutOffer === "string" ? d.fields.checkoutOffer : "";
        funnelOf(offer).walled++;
        wall ??= { email, userId, variant: exposure?.data.variant ?? "", offer };
      }
    }
    if (metered > 0) add(expected.meterValues, String(metered));
    if (wall !== null) walled.push(wall);
  }
  log(`${o.readers} readers, ${o.readers * o.articles} decisions, ${walled.length} walled readers`);

  const seenInVariant: Record<string, number> = {};
  for (const w of walled) {
    if (w.offer === "") continue;
    const k = seenInVariant[w.variant] ?? 0;
    seenInVariant[w.variant] = k + 1;
    // Spread evenly over the variant's readers: the k-th buys when (k * 37) mod 100 falls under its percent.
    const buys = (k * 37) % 100 < (o.buyPercent[w.variant] ?? 0);
    const abandons = !buys && (k * 53) % 100 < o.abandonPercent;
    if (!buys && !abandons) continue;
    const sessionId = await startCheckout(o, w.offer, w.email);
    funnelOf(w.offer).started++;
    if (!buys) continue;
    const seconds = Math.floor((o.now ?? Date.now)() / 1000);
    const event = o.stripe.event(
      "checkout.session.completed",
      {
        id: sessionId,
        object: "checkout.session",
        status: "complete",
        payment_status: "paid",
        mode: "subscription",
        customer: `cus_${o.runId}_${k}_${w.variant}`,
        subscription: `sub_${sessionId}`,
        customer_details: { email: w.email },
      },
      seconds,
    );
    const delivered = await o.stripe.deliver(`${o.base}/v1/checkout/webhook`, event, seconds);
    if (delivered.status !== 200) throw new Error(`webhook answered ${delivered.status}: ${await delivered.text()}`);
    funnelOf(w.offer).completed++;
    funnelOf(w.offer).granted++;
    add(expected.conversions, w.variant);
  }
  const after = await reports(o);
  const observed = difference(before, after);
  return { expected, observed, mismatches: compare(expected, observed), after };
}

async function startCheckout(o: TrafficOptions, offer: string, email: string): Promise<string> {
  const answer = (await send(o, `${o.base}/svc/v1/checkout`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-svc-site-id": o.site, origin: o.origin },
    body: JSON.stringify({ offer, returnPath: "/thanks", cancelPath: "/", email }),
  })) as { url: string };
  return answer.url.slice(answer.url.lastIndexOf("/") + 1);
}

/** A request answered 200 (a 429 is waited out for its Retry-After), as JSON. */
async function send(o: TrafficOptions, url: string, init: RequestInit): Promise<unknown> {
  for (;;) {
    const res = await fetch(url, init);
    if (res.status === 429) {
      const wait = Number(res.headers.get("retry-after") ?? "1");
      o.log?.(`${new URL(url).pathname}: 429, waiting ${wait} s`);
      await Bun.sleep(Math.max(1, wait) * 1000);
      continue;
    }
    const body = await res.json();
    if (!res.ok) throw new Error(`${init.method} ${url} answered ${res.status}: ${JSON.stringify(body)}`);
    return body;
  }
}

function admin(o: TrafficOptions, method: string, path: string, body?: unknown): Promise<unknown> {
  return send(o, `${o.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${o.operatorToken}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

export async function reports(o: Pick<TrafficOptions, "base" | "operatorToken" | "tenant" | "site">): Promise<Reports> {
  const base = `/admin/tenants/${o.tenant}/sites/${o.site}/insight`;
  const get = (path: string) => admin(o as TrafficOptions, "GET", `${base}${path}`);
  return {
    decisions: (await get(`/decisions?range=${RANGE}`)) as DecisionsReport,
    funnel: (await get(`/funnel?range=${RANGE}`)) as FunnelReport,
    experiments: (await get(`/experiments?range=${RANGE}`)) as ExperimentsReport,
    meters: (await get("/meters")) as MetersReport,
  };
}

/** The reports' figures as the script counts them. */
export function figuresOf(r: Reports): Expected {
  const out: Expected = { decisions: {}, funnel: {}, exposures: {}, conversions: {}, meterValues: {} };
  for (const s of r.decisions.series) {
    if (s.feature === "paywall") out.decisions[`paywall|${s.outcome}|${s.variant}`] = s.total;
  }
  for (const f of r.funnel.offers) {
    out.funnel[f.offer] = { walled: f.walled, started: f.started, completed: f.completed, granted: f.granted };
  }
  for (const e of r.experiments.experiments) {
    if (e.experiment !== "paywall_offer") continue;
    for (const v of e.variants) {
      out.exposures[v.variant] = v.exposures;
      out.conversions[v.variant] = v.conversions;
    }
  }
  for (const m of r.meters.meters) {
    if (m.meter === "articles") for (const v of m.values) out.meterValues[String(v.value)] = v.readers;
  }
  return out;
}

function difference(before: Reports, after: Reports): Expected {
  const a = figuresOf(after);
  const b = figuresOf(before);
  const minus = (x: Record<string, number>, y: Record<string, number>) => {
    const out: Record<string, number> = {};
    for (const k of new Set([...Object.keys(x), ...Object.keys(y)])) {
      const d = (x[k] ?? 0) - (y[k] ?? 0);
      if (d !== 0) out[k] = d;
    }
    return out;
  };
  const funnel: Expected["funnel"] = {};
  for (const k of new Set([...Object.keys(a.funnel), ...Object.keys(b.funnel)])) {
    const x = a.funnel[k] ?? { walled: 0, started: 0, completed: 0, granted: 0 };
    const y = b.funnel[k] ?? { walled: 0, started: 0, completed: 0, granted: 0 };
    const d = {
      walled: x.walled - y.walled,
      started: x.started - y.started,
      completed: x.completed - y.completed,
      granted: x.granted - y.granted,
    };
    if (d.walled || d.started || d.completed || d.granted) funnel[k] = d;
  }
  return {
    decisions: minus(a.decisions, b.decisions),
    funnel,
    exposures: minus(a.exposures, b.exposures),
    conversions: minus(a.conversions, b.conversions),
    // A reader moves between values as they read; the script's readers are new, so the net
    // change per value is theirs (as long as no other reader of the site reads meanwhile).
    meterValues: minus(a.meterValues, b.meterValues),
  };
}

function compare(expected: Expected, observed: Expected): string[] {
  const out: string[] = [];
  const sorted = (x: unknown) =>
    JSON.stringify(x, (_k, v) =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([p], [q]) => (p < q ? -1 : 1)))
        : v,
    );
  for (const part of Object.keys(expected) as (keyof Expected)[]) {
    const e = sorted(expected[part]);
    const o = sorted(observed[part]);
    if (e !== o) out.push(`${part}: the script produced ${e}, the reports show ${o}`);
  }
  return out;
}

if (import.meta.main) {
  const env = process.env;
  const dataDir = resolve(env.SVC_DATA_DIR || "./data");
  const fromFile = (name: string) => {
    const file = join(dataDir, name);
    return existsSync(file) ? readFileSync(file, "utf8").trim() : undefined;
  };
  const operatorToken = env.SVC_OPERATOR_TOKEN || fromFile("operator-token");
  const key = env.SVC_KEY || fromFile("demo-key");
  if (!operatorToken || !key) {
    console.error(
      "needs SVC_OPERATOR_TOKEN (or $SVC_DATA_DIR/operator-token) and SVC_KEY (or $SVC_DATA_DIR/demo-key: run `npm run svc -- demo-request` once)",
    );
    process.exit(2);
  }
  const base = (env.SVC_URL || `http://127.0.0.1:${env.PORT || 3000}`).replace(/\/$/, "");
  const document = JSON.parse(readFileSync(join(import.meta.dir, "..", "docs", "examples", "demo-site.json"), "utf8"));
  const secretKey = "sk_test_insight_traffic_0123456789";
  const webhookSecret = "whsec_insight_traffic_0123456789";
  const stripe = await startFakeStripe({
    secretKey,
    webhookSecret,
    prices: ["price_demo_monthly", "price_demo_annual", "price_demo_pass"],
  });
  try {
    await admin({ base, operatorToken } as TrafficOptions, "PUT", "/admin/tenants/default/services/stripe", {
      secretKey,
      webhookSecret,
      apiBase: stripe.apiBase,
    });
    const result = await runInsightTraffic({
      base,
      operatorToken,
      key,
      tenant: "default",
      site: "demo",
      origin: document.allowedOrigins[0],
      contentSecret: document.contentKeys[0].secret,
      readers: Number(env.READERS || 400),
      articles: Number(env.ARTICLES || 8),
      buyPercent: { annual: 18, monthly: 6 },
      abandonPercent: 5,
      stripe,
      runId: Date.now().toString(36),
      log: (line) => console.log(line),
    });
    console.log(JSON.stringify({ expected: result.expected }, null, 1));
    for (const e of result.after.experiments.experiments) console.log(`${e.experiment}: ${e.sentence}`);
    if (result.mismatches.length > 0) {
      for (const m of result.mismatches) console.error(m);
      process.exit(1);
    }
    console.log("the reports show exactly the counts this run produced");
  } finally {
    await stripe.stop();
  }
}
