import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { Browser } from "playwright-core";
import { headlineDocument } from "../fixtures/documents";
import { launchChromium } from "../helpers/browser";
import { signedContent } from "../helpers/content";
import { freshDatabase } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

// biome-ignore lint/suspicious/noExplicitAny: answers are read as plain JSON.
type Json = Record<string, any>;

/** What test/ofrep/web-page.ts puts on the page's global object. */
interface PageFlags {
  flags: {
    start(context: unknown): Promise<void>;
    setContext(context: unknown): Promise<void>;
    read(): { section: { reason?: string } };
  };
}

/** The page's script: the stock web SDK and OFREP web provider, bundled as a browser would load them. */
async function bundlePage(): Promise<string> {
  const built = await Bun.build({ entrypoints: [`${import.meta.dir}/web-page.ts`], target: "browser", format: "esm" });
  if (!built.success) throw new Error(built.logs.map(String).join("\n"));
  return (await built.outputs[0]?.text()) as string;
}

/**
 * The OpenFeature web SDK with the OFREP web provider in Chromium, with no svc extension: the
 * publisher's page asks its own origin, whose server passes `/ofrep/*` on to the service with the
 * key (a key never goes to the browser), as a publisher's site would.
 */
describe("OFREP with the stock OpenFeature web SDK in Chromium", () => {
  let h: Harness;
  let drop: () => Promise<void>;
  let site: ReturnType<typeof Bun.serve>;
  let browser: Browser;
  const asked: Json[] = [];

  beforeAll(async () => {
    const db = await freshDatabase("embedded");
    drop = db.drop;
    h = await startHarness(db, { config: { HOST: "127.0.0.1" } });
    const { key } = await seedSite(h, "news", headlineDocument());
    const script = await bundlePage();
    site = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(request) {
        const url = new URL(request.url);
        if (url.pathname === "/") {
          return new Response('<!doctype html><title>news</title><script type="module" src="/flags.js"></script>', {
            headers: { "content-type": "text/html" },
          });
        }
        if (url.pathname === "/flags.js")
          return new Response(script, { headers: { "content-type": "text/javascript" } });
        if (!url.pathname.startsWith("/ofrep/")) return new Response("not found", { status: 404 });
        const body = await request.text();
        asked.push({ path: url.pathname, body: JSON.parse(body) });
        const headers = new Headers({ "content-type": "application/json", "x-svc-site-id": "news" });
        headers.set("authorization", `Bearer ${key}`);
        const etag = request.headers.get("if-none-match");
        if (etag !== null) headers.set("if-none-match", etag);
        return h.app.handle(new Request(`http://127.0.0.1${url.pathname}`, { method: "POST", headers, body }));
      },
    });
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    site?.stop(true);
    await h?.stop();
    await drop?.();
  }, 60_000);

  it("evaluates the site's flags in bulk with no svc.features, and again when the context changes", async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`http://127.0.0.1:${site.port}/`);
    await page.waitForFunction(() => "flags" in globalThis);
    const sport = signedContent({ id: "w-1", section: "sport" });
    const other = signedContent({ id: "w-2", section: "news" });
    await page.evaluate(
      (content) => (globalThis as unknown as PageFlags).flags.start({ targetingKey: "web-reader", content }),
      sport,
    );
    const first = (await page.evaluate(() => (globalThis as unknown as PageFlags).flags.read())) as Json;
    expect(errors).toEqual([]);
    expect(first.section).toMatchObject({ value: { label: "Sport" }, variant: "sport", reason: "TARGETING_MATCH" });
    expect(first.section.flagMetadata).toMatchObject({ type: "data" });
    expect(first.headline.reason).toBe("SPLIT");
    expect(["plain", "bold"]).toContain(first.headline.variant);
    expect(first.hidden).toMatchObject({ variant: "x", reason: "DISABLED" });
    // The paywall ticks a meter: only evaluated when named, so the SDK reads its default.
    expect(first.paywall).toMatchObject({ value: { fallback: true }, errorCode: "FLAG_NOT_FOUND" });

    // A new context: the provider may answer from its cache first, then from the service.
    await page.evaluate(
      (content) => (globalThis as unknown as PageFlags).flags.setContext({ targetingKey: "web-reader", content }),
      other,
    );
    await page.waitForFunction(() => (globalThis as unknown as PageFlags).flags.read().section.reason === "DEFAULT");
    const later = (await page.evaluate(() => (globalThis as unknown as PageFlags).flags.read())) as Json;
    expect(later.section).toMatchObject({ value: {}, variant: "other", reason: "DEFAULT" });
    expect(asked.length).toBeGreaterThanOrEqual(2);
    for (const call of asked) {
      expect(call.path).toBe("/ofrep/v1/evaluate/flags");
      expect(call.body.context["svc.features"]).toBeUndefined();
    }
    await page.close();
  });
});
