import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import type { DecisionsReport, ExperimentsReport, FunnelReport, MetersReport } from "../../src/insight/model";
import { launchChromium } from "../helpers/browser";
import { consoleMailbox } from "../helpers/console";
import { freshDatabase, storeKinds } from "../helpers/databases";
import type { FakeStripe } from "../helpers/fake-stripe";
import { type Harness, seedSite, serveHarness, startHarness } from "../helpers/harness";
import { demo, demoTraffic, startDemoStripe } from "./demo-traffic";

/** What the page's script drew for one table (`figure[data-plotted]`, client/insight.ts). */
interface Plotted {
  labels: string[];
  series: { name: string; values: number[] }[];
}

/** The page's document inside functions Playwright runs in the page (the test's types have no DOM). */
interface PageWindow {
  __csp: string[];
  document: {
    addEventListener(type: string, listener: (e: { violatedDirective: string; blockedURI: string }) => void): void;
    querySelectorAll(selector: string): ArrayLike<{
      width: number;
      height: number;
      getContext(kind: "2d"): { getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> } };
    }>;
  };
}

const SHOTS = process.env.SVC_CONSOLE_SCREENSHOTS;

describe.each(storeKinds)("insight pages in Chromium (%s store)", (kind) => {
  let h: Harness;
  let stop: () => Promise<void>;
  let browser: Browser;
  let stripe: FakeStripe;
  let origin = "";
  const box = consoleMailbox();
  const messages: string[] = [];

  beforeAll(async () => {
    const db = await freshDatabase(kind);
    h = await startHarness(db, { mailTransport: box.transport });
    // Checkout sessions are stamped by Postgres' clock: the reports' windows must be on the same day.
    h.clock.set(Date.now());
    const { key } = await seedSite(h, "demo", demo);
    // A viewer per sign-in: each address may be mailed only a few links an hour.
    for (let i = 0; i < 6; i++) {
      await h.admin("POST", "/admin/tenants/default/console-users", { email: `vic${i}@example.com`, role: "viewer" });
    }
    stripe = await startDemoStripe(h);
    const api = serveHarness(h);
    const result = await demoTraffic(h, { base: api.base, key, stripe, readers: 12, runId: "b" });
    expect(result.mismatches).toEqual([]);
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (request) => h.app.handle(request) });
    origin = `http://localhost:${server.port}`;
    browser = await launchChromium();
    stop = async () => {
      await browser?.close();
      server.stop(true);
      await api.stop();
      await stripe.stop();
      await h.stop();
      await db.drop();
    };
  }, 180_000);
  afterAll(async () => {
    await stop();
  }, 60_000);

  let viewers = 0;
  async function signedIn(): Promise<{ context: BrowserContext; page: Page }> {
    const email = `vic${viewers++}@example.com`;
    h.clock.advance(61_000);
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const page = await context.newPage();
    page.on("console", (m) => {
      if (m.type() === "error" || /Content Security Policy/i.test(m.text())) messages.push(m.text());
    });
    page.on("pageerror", (e) => messages.push(e.message));
    // Every CSP violation the page reports, inline styles included (a listener from before any page script).
    await page.addInitScript(() => {
      const w = globalThis as unknown as PageWindow;
      w.__csp = [];
      w.document.addEventListener("securitypolicyviolation", (e) => {
        w.__csp.push(`${e.violatedDirective} ${e.blockedURI}`);
      });
    });
    await page.goto(`${origin}/console/sign-in`);
    await page.getByLabel("Email address").fill(email);
    await page.getByRole("button", { name: "Email me a sign-in link" }).click();
    await page.getByText("If that address is a console user").waitFor();
    // The link is written by a job (the same work whatever the address: docs/security.md).
    await h.deps.jobs.runDue();
    await h.deps.outbox.drain();
    await page.goto(box.lastLink(email));
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Sites" }).waitFor();
    return { context, page };
  }

  const api = async <T>(path: string): Promise<T> => {
    const res = await h.admin("GET", `/admin/tenants/default/sites/demo/insight/${path}`);
    expect(res.status).toBe(200);
    return (await res.json()) as T;
  };
  const plotted = async (page: Page, table: string): Promise<Plotted> => {
    const figure = page.locator(`figure[data-for="${table}"]`);
    await figure.waitFor({ state: "attached" });
    return JSON.parse((await figure.getAttribute("data-plotted")) as string) as Plotted;
  };

  for (const range of ["24h", "7d", "30d"] as const) {
    it(`draws the charts of the ${range} range with the numbers the API gives, and reports no CSP violation`, async () => {
      const { context, page } = await signedIn();
      messages.length = 0;
      await page.goto(`${origin}/console/sites/demo/insight?range=${range}`);
      await page.getByRole("heading", { name: "Insight: demo" }).waitFor();

      const decisions = await api<DecisionsReport>(`decisions?range=${range}`);
      const over = await plotted(page, "decisions-over-time");
      expect(over.series.map((s) => s.name)).toEqual(
        decisions.series.map((s) => `${s.feature}: ${s.outcome}${s.variant ? ` (${s.experiment} ${s.variant})` : ""}`),
      );
      expect(over.series.map((s) => s.values)).toEqual(decisions.series.map((s) => s.counts));
      expect(decisions.total).toBe(12 * 7);

      const funnel = await api<FunnelReport>(`funnel?range=${range}`);
      const steps = await plotted(page, "funnel-offers");
      expect(steps.labels).toEqual(["Walled", "Checkouts started", "Completed", "Granted"]);
      expect(steps.series.map((s) => s.values)).toEqual(
        [...funnel.offers, funnel.total].map((o) => [o.walled, o.started, o.completed, o.granted]),
      );
      expect(funnel.total.walled).toBe(24);

      const experiments = await api<ExperimentsReport>(`experiments?range=${range}`);
      const e = experiments.experiments.find((x) => x.experiment === "paywall_offer");
      const rates = await plotted(page, "experiment-paywall_offer");
      expect(rates.labels).toEqual(e?.variants.map((v) => v.variant) as string[]);
      expect(rates.series).toEqual([
        { name: "Rate (%)", values: e?.variants.map((v) => Number((v.rate * 100).toFixed(2))) as number[] },
      ]);
      await expect(page.getByText(e?.sentence as string)).toBeTruthy();

      const meters = await api<MetersReport>("meters");
      const articles = meters.meters.find((m) => m.meter === "articles");
      const readers = await plotted(page, "meter-articles");
      expect(readers.series[0]?.values).toEqual(articles?.values.map((v) => v.readers) as number[]);
      expect(articles?.values).toEqual([{ value: 5, readers: 12 }]);

      // The charts are drawn: every canvas has painted pixels.
      const painted = await page.evaluate(() => {
        const w = globalThis as unknown as PageWindow;
        return Array.from(w.document.querySelectorAll("figure.chart canvas"), (c) => {
          const data = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
          let n = 0;
          for (let i = 3; i < data.length; i += 4) if ((data[i] as number) > 0) n++;
          return n;
        });
      });
      expect(painted.length).toBe(4);
      for (const n of painted) expect(n).toBeGreaterThan(100);
      // The docs' picture (scripts/console-screenshots.sh).
      if (SHOTS && range === "7d")
        await page.screenshot({ path: `${SHOTS}/insight.png`, fullPage: true, caret: "initial" });

      expect(await page.evaluate(() => (globalThis as unknown as PageWindow).__csp)).toEqual([]);
      expect(messages).toEqual([]);
      await context.close();
    }, 60_000);
  }

  it("draws the charts after a boosted link from the sites page too (htmx swaps the body only)", async () => {
    const { context, page } = await signedIn();
    // signedIn() ends on the sites page, reached by the sign-in's own redirect.
    await page.getByRole("link", { name: "Insight" }).first().click();
    await page.getByRole("heading", { name: "Insight: demo" }).waitFor();
    const over = await plotted(page, "decisions-over-time");
    expect(over.series.length).toBeGreaterThan(0);
    expect(await page.evaluate(() => (globalThis as unknown as PageWindow).__csp)).toEqual([]);
    await context.close();
  }, 60_000);

  it("is a page of tables without script: the same numbers, no chart", async () => {
    const signed = await signedIn();
    // The same session in a browser with script turned off.
    const context = await browser.newContext({
      storageState: await signed.context.storageState(),
      javaScriptEnabled: false,
    });
    await signed.context.close();
    const page = await context.newPage();
    await page.goto(`${origin}/console/sites/demo/insight?range=7d`);
    await page.getByRole("heading", { name: "Insight: demo" }).waitFor();
    expect(await page.locator("figure.chart").count()).toBe(0);
    const funnel = await api<FunnelReport>("funnel?range=7d");
    const total = page.locator("#funnel-offers tbody tr").last();
    expect((await total.locator("td").allTextContents()).map(Number)).toEqual([
      funnel.total.walled,
      funnel.total.started,
      funnel.total.completed,
      funnel.total.granted,
    ]);
    expect(await page.locator("#meter-articles tbody tr td").allTextContents()).toEqual(["12"]);
    await context.close();
  }, 60_000);

  it("sends a signed-out browser to sign in, and answers 404 for a site the tenant lacks", async () => {
    const out = await h.app.handle(new Request("http://localhost/console/sites/demo/insight", { redirect: "manual" }));
    expect(out.status).toBe(303);
    expect(out.headers.get("location")).toBe("/console/sign-in");
    const { context, page } = await signedIn();
    const missing = await page.goto(`${origin}/console/sites/nope/insight`);
    expect(missing?.status()).toBe(404);
    await context.close();
  }, 60_000);
});
