import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { basicDocument } from "../fixtures/documents";
import { launchChromium } from "../helpers/browser";
import { consoleMailbox } from "../helpers/console";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

/** Where the docs' screenshots go when SVC_CONSOLE_SCREENSHOTS names a folder (scripts/console-screenshots.sh). */
const SHOTS = process.env.SVC_CONSOLE_SCREENSHOTS;

describe.each(storeKinds)("console in Chromium (%s store)", (kind) => {
  let h: Harness;
  let drop: () => Promise<void>;
  let server: ReturnType<typeof Bun.serve>;
  let browser: Browser;
  let origin = "";
  const box = consoleMailbox();
  const errors: string[] = [];

  beforeAll(async () => {
    const db = await freshDatabase(kind);
    drop = db.drop;
    h = await startHarness(db, { mailTransport: box.transport });
    await seedSite(h, "news", basicDocument());
    await h.admin("POST", "/admin/tenants/default/console-users", { email: "ada@example.com", role: "admin" });
    await h.admin("POST", "/admin/tenants/default/console-users", { email: "vic@example.com", role: "viewer" });
    server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (request) => h.app.handle(request) });
    origin = `http://localhost:${server.port}`;
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    server?.stop(true);
    await h.stop();
    await drop();
  }, 60_000);

  /** A fresh browser profile signed in as `email` through the sign-in page and the mailed link. */
  async function signedIn(email: string): Promise<{ context: BrowserContext; page: Page }> {
    h.clock.advance(61_000); // past the per-address mail limit of earlier sign-ins
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    const page = await context.newPage();
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(m.text());
    });
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${origin}/console`);
    expect(new URL(page.url()).pathname).toBe("/console/sign-in");
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/sign-in.png` });
    await page.getByLabel("Email address").fill(email);
    await page.getByRole("button", { name: "Email me a sign-in link" }).click();
    await page.getByText("If that address is a console user").waitFor();
    await h.deps.outbox.drain();
    await page.goto(box.lastLink(email));
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Sites" }).waitFor();
    return { context, page };
  }

  it("signs an admin in, issues a key that decide accepts, revokes it and decide refuses it", async () => {
    const { context, page } = await signedIn("ada@example.com");
    expect(await page.getByText("ada@example.com (admin, tenant default)").isVisible()).toBe(true);
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/sites.png` });
    await page.getByRole("link", { name: "Keys" }).first().click();
    await page.getByRole("heading", { name: "Keys of news" }).waitFor();
    await page.getByLabel("Name").fill("Browser key");
    await page.getByLabel("Expires in (days, optional)").fill("30");
    await page.getByRole("button", { name: "Issue key" }).click();
    const value = (await page.locator("#new-key").textContent()) as string;
    expect(value.length).toBeGreaterThan(20);
    // The shown value has the keyboard focus's box around it, and a copy button.
    expect(await page.evaluate(() => document.activeElement?.className)).toBe("secret");
    expect(await page.getByRole("button", { name: "Copy" }).isVisible()).toBe(true);
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/key-issued.png` });

    const decide = () =>
      fetch(`${origin}/v1/decide`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-svc-site-id": "news", authorization: `Bearer ${value}` },
        body: JSON.stringify({ features: ["paywall"], deviceId: "browser-1" }),
      });
    expect((await decide()).status).toBe(200);

    const row = page.getByRole("row").filter({ hasText: "Browser key" });
    await row.getByRole("link", { name: "Revoke Browser key" }).click();
    await page.getByRole("heading", { name: "Revoke key Browser key?" }).waitFor();
    await page.getByRole("button", { name: "Revoke" }).click();
    await page.getByText("Key Browser key revoked.").waitFor();
    expect(await page.getByRole("row").filter({ hasText: "Browser key" }).textContent()).toContain("revoked");
    expect((await decide()).status).toBe(401);
    await context.close();
  });

  it("shows a viewer the keys and no actions at all", async () => {
    const { context, page } = await signedIn("vic@example.com");
    expect(await page.getByRole("button", { name: "Create site" }).count()).toBe(0);
    expect(await page.getByRole("button", { name: /Disable|Enable/ }).count()).toBe(0);
    await page.goto(`${origin}/console/sites/news/keys`);
    await page.getByRole("heading", { name: "Keys of news" }).waitFor();
    expect(await page.getByRole("row").count()).toBeGreaterThan(1);
    expect(await page.getByRole("button", { name: "Issue key" }).count()).toBe(0);
    expect(await page.getByRole("link", { name: /Revoke/ }).count()).toBe(0);
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/keys-viewer.png` });
    await context.close();
  });

  it("ran without a script error or a Content-Security-Policy violation", () => {
    expect(errors).toEqual([]);
  });
});
