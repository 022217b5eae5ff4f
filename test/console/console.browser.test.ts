import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { basicDocument } from "../fixtures/documents";
import { launchChromium } from "../helpers/browser";
import { consoleMailbox, handedOff } from "../helpers/console";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

/**
 * The page's document inside a function Playwright runs in the page (the test's types have no
 * DOM; the function is sent as its text, so it names nothing of this file but types). Functions,
 * not strings: the console's CSP forbids the eval a string predicate needs.
 */
interface PageDocument {
  activeElement: { id: string; classList: { contains(name: string): boolean } } | null;
  querySelector(selector: string): { value: string } | null;
}

/**
 * A screenshot for the docs, when asked for. `caret: "initial"`: hiding the caret injects an
 * inline style, which the console's CSP refuses (and the test counts as an error).
 */
async function shot(page: Page, name: string, fullPage = false): Promise<void> {
  if (SHOTS) await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage, caret: "initial" });
}

/** Where the docs' screenshots go when SVC_CONSOLE_SCREENSHOTS names a folder (scripts/console-screenshots.sh). */
const SHOTS = process.env.SVC_CONSOLE_SCREENSHOTS;

describe.each(storeKinds)("console in Chromium (%s store)", (kind) => {
  let h: Harness;
  let drop: () => Promise<void>;
  let server: ReturnType<typeof Bun.serve>;
  let browser: Browser;
  let origin = "";
  let key = "";
  const box = consoleMailbox();
  const errors: string[] = [];

  beforeAll(async () => {
    const db = await freshDatabase(kind);
    drop = db.drop;
    h = await startHarness(db, { mailTransport: box.transport, config: { SVC_IMPACT_SAMPLE_EVERY: "1" } });
    ({ key } = await seedSite(h, "news", basicDocument()));
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
      // Chromium logs every 4xx answer; the refusals this test asks for (422, 409) are not errors.
      if (m.type() === "error" && !/status of 4(22|09) /.test(m.text())) errors.push(m.text());
    });
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${origin}/console`);
    expect(new URL(page.url()).pathname).toBe("/console/sign-in");
    await shot(page, "sign-in");
    await page.getByLabel("Email address").fill(email);
    await page.getByRole("button", { name: "Email me a sign-in link" }).click();
    await page.getByText("If that address is a console user").waitFor();
    await handedOff(h);
    await page.goto(box.lastLink(email));
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Sites" }).waitFor();
    return { context, page };
  }

  it("signs an admin in, issues a key that decide accepts, revokes it and decide refuses it", async () => {
    const { context, page } = await signedIn("ada@example.com");
    expect(await page.getByText("ada@example.com (admin, tenant default)").isVisible()).toBe(true);
    await shot(page, "sites");
    await page.getByRole("link", { name: "Keys" }).first().click();
    await page.getByRole("heading", { name: "Keys of news" }).waitFor();
    await page.getByLabel("Name").fill("Browser key");
    await page.getByLabel("Expires in (days, optional)").fill("30");
    await page.getByRole("button", { name: "Issue key" }).click();
    const value = (await page.locator("#new-key").textContent()) as string;
    expect(value.length).toBeGreaterThan(20);
    // The shown value has the keyboard focus's box around it, and a copy button.
    await page.waitForFunction(
      () => (globalThis as unknown as { document: PageDocument }).document.activeElement?.classList.contains("secret"),
      undefined,
      {
        timeout: 5000,
      },
    );
    expect(await page.getByRole("button", { name: "Copy" }).isVisible()).toBe(true);
    await shot(page, "key-issued");

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
    await shot(page, "keys-viewer");
    await context.close();
  });

  it("finds an uploaded document's error at its pointer, then diffs, stages, tries, publishes and rolls back", async () => {
    const { context, page } = await signedIn("ada@example.com");
    await page.goto(`${origin}/console/sites/news/documents`);
    await page.getByRole("heading", { name: "Documents of news" }).waitFor();
    const invalid = basicDocument() as { features: { paywall: { rules: { then: string }[] } } };
    (invalid.features.paywall.rules[0] as { then: string }).then = "nope";
    await page.getByLabel("Upload a JSON file (fills the text below)").setInputFiles({
      name: "site.json",
      mimeType: "application/json",
      buffer: Buffer.from(JSON.stringify(invalid)),
    });
    await page.waitForFunction(() =>
      (globalThis as unknown as { document: PageDocument }).document.querySelector("#document")?.value.includes("nope"),
    );
    await page.getByRole("button", { name: "Validate" }).click();
    await page.getByRole("alert").getByText("/features/paywall/rules/0/then").waitFor();
    // The error summary takes the keyboard focus once htmx has settled the new page.
    await page.waitForFunction(
      () => (globalThis as unknown as { document: PageDocument }).document.activeElement?.id === "errors",
      undefined,
      { timeout: 5000 },
    );
    await shot(page, "document-error", true);

    const changed = basicDocument() as { features: { teaser: { outcomes: { on: { fields: { size: string } } } } } };
    changed.features.teaser.outcomes.on.fields.size = "small";
    await page.getByLabel("Site document (JSON)").fill(JSON.stringify(changed, null, 2));
    await page.getByRole("button", { name: "Diff against live" }).click();
    await page.locator("#diff").getByText("/features/teaser/outcomes/on/fields/size").waitFor();
    await page.getByRole("button", { name: "Stage as preview" }).click();
    await page.getByText("Staged as version 2.").waitFor();

    await page
      .getByLabel(/Try a decide against the staged version/)
      .fill('{ "features": ["teaser"], "deviceId": "d-9" }');
    await page.getByRole("button", { name: "Try it" }).click();
    expect(await page.locator("#try-answer").textContent()).toContain('"small"');
    await shot(page, "documents", true);

    const size = async () => {
      const res = await h.request("POST", "/v1/decide", {
        headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}` },
        body: { features: ["teaser"], deviceId: `reader-${Math.random()}` },
      });
      return ((await res.json()) as { decisions: { teaser: { fields?: { size?: string } } } }).decisions.teaser.fields
        ?.size;
    };
    for (let i = 0; i < 5; i++) expect(await size()).toBe("large");
    await new Promise((resolve) => setImmediate(resolve)); // samples are captured at setImmediate
    await page.getByRole("link", { name: "Impact of publishing the staged version" }).click();
    await page.getByRole("heading", { name: /Impact of publishing news version 2/ }).waitFor();
    const teaser = page.getByRole("row").filter({ hasText: "teaser" });
    expect(await teaser.getByRole("cell").nth(2).textContent()).toBe("5");
    await shot(page, "impact", true);
    await page.goto(`${origin}/console/sites/news/documents`);
    await page.getByRole("button", { name: "Publish version 2" }).click();
    await page.getByText("Version 2 is live.").waitFor();
    expect(await size()).toBe("small");
    await page.getByRole("button", { name: "Roll back to version 1" }).click();
    await page.getByText("Version 1 is live.").waitFor();
    expect(await size()).toBe("large");
    await context.close();
  });

  it("ran without a script error or a Content-Security-Policy violation", () => {
    expect(errors).toEqual([]);
  });
});
