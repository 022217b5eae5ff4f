import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { withoutSecrets } from "../../src/sites/source-secrets";
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
  querySelectorAll(selector: string): Iterable<{ style: { backgroundColor: string } }>;
  addEventListener(
    type: "securitypolicyviolation",
    listener: (e: { violatedDirective: string; sourceFile: string; lineNumber: number }) => void,
  ): void;
  createElement(name: "style"): { textContent: string };
  head: { append(node: unknown): void };
}
interface PageWindow {
  document: PageDocument;
  location: { pathname: string };
  console: { error(text: string): void };
}

/**
 * Every Content-Security-Policy violation a page meets, as a console error (where the test
 * collects Chromium's own reports too): an init script, run before the page's own scripts and
 * outside its CSP.
 */
async function watchViolations(context: BrowserContext): Promise<void> {
  await context.addInitScript(() => {
    const w = globalThis as unknown as PageWindow;
    w.document.addEventListener("securitypolicyviolation", (e) =>
      w.console.error(
        `CSP violation on ${w.location.pathname}: ${e.violatedDirective} at ${e.sourceFile}:${e.lineNumber}`,
      ),
    );
  });
}

/**
 * Styles on every field, set as a password manager or a screenshot tool sets them (CSSOM, which
 * the CSP allows): htmx copied such a style attribute across a swap, and the CSP reported it.
 */
async function styleFields(page: Page): Promise<void> {
  await page.evaluate(() => {
    for (const field of (globalThis as unknown as PageWindow).document.querySelectorAll(
      "input, textarea, select, button",
    )) {
      field.style.backgroundColor = "rgb(250, 255, 189)";
    }
  });
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
    h.clock.advance(601_000); // past the per-mailbox mail budget of earlier sign-ins (3 in 10 minutes)
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    await watchViolations(context);
    const page = await context.newPage();
    page.on("console", (m) => {
      // Chromium logs every 4xx answer; the refusals this test asks for (422, 409, 404) are not errors.
      if (m.type() === "error" && !/status of 4(22|09|04) /.test(m.text())) errors.push(m.text());
    });
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${origin}/console`);
    expect(new URL(page.url()).pathname).toBe("/console/sign-in");
    await shot(page, "sign-in");
    await page.getByLabel("Email address").fill(email);
    await styleFields(page);
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
    await page.getByLabel("Upload a JSON file (fills the text below)").setInputFiles({
      name: "changed.json",
      mimeType: "application/json",
      buffer: Buffer.from(JSON.stringify(changed, null, 2)),
    });
    await page.waitForFunction(() =>
      (globalThis as unknown as PageWindow).document.querySelector("#document")?.value.includes('"small"'),
    );
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

  it("edits a document in the editor: highlighted, a problem at its pointer as you type, staged as written", async () => {
    const { context, page } = await signedIn("ada@example.com");
    await page.getByRole("link", { name: "Documents" }).first().click();
    await page.getByRole("heading", { name: "Documents of news" }).waitFor();
    const editor = page.locator(".cm-editor");
    await editor.waitFor();
    expect(await page.locator("#document").isVisible()).toBe(false);
    // Highlighted: member names and strings are tokens of their own, coloured by console.css.
    const name = page.locator(".cm-content .tok-propertyName").first();
    const string = page.locator(".cm-content .tok-string").first();
    const colour = (l: typeof name) =>
      l.evaluate(
        (e) => (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(e).color,
      );
    expect(await colour(name)).toBe("rgb(139, 28, 98)");
    expect(await colour(string)).toBe("rgb(26, 107, 47)");

    // An author's document: tabs, and members in an order of its own (jsonb's would differ).
    const doc = basicDocument() as Record<string, unknown> & { features: { paywall: { rules: { then: string }[] } } };
    (doc.features.paywall.rules[0] as { then: string }).then = "nope";
    const reordered = Object.fromEntries(
      Object.keys(doc)
        .reverse()
        .map((k) => [k, doc[k]]),
    );
    const text = JSON.stringify(reordered, null, "\t");
    await page.getByLabel("Upload a JSON file (fills the text below)").setInputFiles({
      name: "site.json",
      mimeType: "application/json",
      buffer: Buffer.from(text),
    });
    const problems = page.locator(".live-problems");
    await problems.getByText("1 problem found as you type").waitFor();
    const problem = problems.getByRole("button", { name: "/features/paywall/rules/0/then" });
    expect(await problems.textContent()).toContain('then names unknown outcome "nope"');
    await problem.click();
    // The editor scrolled to the spot, which is underlined as an error: the value itself.
    const underlined = page.locator(".cm-lintRange-error");
    await underlined.first().waitFor();
    expect(await underlined.first().textContent()).toBe('"nope"');
    // The editor keeps its height (30rem) and scrolled itself to the problem.
    const box = await page.locator(".cm-editor").boundingBox();
    expect(box?.height).toBe(480);
    expect(
      await page.locator(".cm-scroller").evaluate((e) => (e as unknown as { scrollTop: number }).scrollTop),
    ).toBeGreaterThan(0);
    await shot(page, "document-editor");

    // The click selected the value: typing replaces it, and the problem goes as you type.
    await page.keyboard.type('"free"');
    await problems.getByText("No problems found as you type").waitFor();
    expect(await page.locator(".cm-lintRange-error").count()).toBe(0);
    await page.getByRole("button", { name: "Stage as preview" }).click();
    const staged = await page.getByText(/Staged as version \d+\./).textContent();
    const version = Number(staged?.match(/version (\d+)/)?.[1]);
    // Stored as written: the author's text (tabs, member order), with the one edit, less the
    // content keys' secrets (kept sealed apart: src/sites/source-secrets.ts).
    await page.goto(`${origin}/console/sites/news/documents?version=${version}`);
    expect(await page.locator("#version-text").textContent()).toBe(withoutSecrets(text.replace('"nope"', '"free"')));
    const normalised = JSON.parse((await page.locator("#version-normalised").textContent()) as string);
    expect(Object.keys(normalised)).toEqual(Object.keys(doc).sort());
    await context.close();
  });

  it("works without script: the document is a plain textarea, checked on the server", async () => {
    const { context } = await signedIn("ada@example.com");
    const cookies = await context.cookies();
    const plain = await browser.newContext({ javaScriptEnabled: false });
    await plain.addCookies(cookies);
    const bare = await plain.newPage();
    bare.on("console", (m) => {
      if (m.type() === "error" && !/status of 4(22|09|04) /.test(m.text())) errors.push(m.text());
    });
    await bare.goto(`${origin}/console/sites/news/documents`);
    const area = bare.getByLabel("Site document (JSON)");
    expect(await area.isVisible()).toBe(true);
    expect(await bare.locator(".cm-editor").count()).toBe(0);
    await area.fill('{ "schemaVersion": 1, "features": { "x": 1 } }');
    await bare.getByRole("button", { name: "Validate" }).click();
    await bare.getByRole("alert").getByText("/features/x").first().waitFor();
    await plain.close();
    await context.close();
  });

  it("the violation watch sees a violation when a page has one", async () => {
    const context = await browser.newContext();
    await watchViolations(context);
    const page = await context.newPage();
    const seen: string[] = [];
    page.on("console", (m) => {
      if (m.text().startsWith("CSP violation")) seen.push(m.text());
    });
    await page.goto(`${origin}/console/sign-in`);
    await page.evaluate(() => {
      const style = (globalThis as unknown as PageWindow).document.createElement("style");
      style.textContent = "body { color: red }";
      (globalThis as unknown as PageWindow).document.head.append(style);
    });
    for (let i = 0; i < 50 && seen.length === 0; i++) await page.evaluate(() => new Promise((r) => setTimeout(r, 20)));
    expect(seen[0]).toContain("CSP violation on /console/sign-in: style-src-elem");
    await context.close();
  });

  it("reports no CSP violation on any console page, with styles set on every field before each post", async () => {
    expect(
      (await h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document: basicDocument(), preview: true }))
        .status,
    ).toBe(200);
    const { context, page } = await signedIn("ada@example.com");
    const visit = async (path: string, heading: string | RegExp) => {
      await page.goto(`${origin}${path}`);
      await page.getByRole("heading", { name: heading }).first().waitFor();
      await styleFields(page);
    };
    await visit("/console", "Sites");
    await page.getByLabel("Site id").fill("styled");
    await styleFields(page);
    await page.getByRole("button", { name: "Create site" }).click();
    await page.getByText("Site styled created.").waitFor();
    await styleFields(page);
    const styled = page.getByRole("row").filter({ hasText: "styled" });
    await styled.getByRole("button", { name: "Disable" }).click();
    await styled.getByText("Disabled").waitFor();

    await visit("/console/sites/news/keys", "Keys of news");
    await page.getByLabel("Name").fill("Styled key");
    await styleFields(page);
    await page.getByRole("button", { name: "Issue key" }).click();
    await page.locator("#new-key").waitFor();
    await styleFields(page);
    await page.getByRole("link", { name: "Revoke Styled key" }).click();
    await page.getByRole("heading", { name: "Revoke key Styled key?" }).waitFor();
    await styleFields(page);
    await page.getByRole("button", { name: "Revoke" }).click();
    await page.getByText("Key Styled key revoked.").waitFor();

    await visit("/console/sites/news/documents", "Documents of news");
    await page.locator(".cm-editor").waitFor();
    await styleFields(page);
    await page.getByRole("button", { name: "Validate" }).click();
    await page.getByText("The document is valid.").waitFor();
    await styleFields(page);
    await page.getByRole("button", { name: "Mint a preview token" }).click();
    await page.locator("#preview-token").waitFor();
    await page
      .getByLabel(/Try a decide against the staged version/)
      .fill('{ "features": ["teaser"], "deviceId": "d-9" }');
    await styleFields(page);
    await page.getByRole("button", { name: "Try it" }).click();
    await page.locator("#try-answer").waitFor();
    await visit("/console/sites/news/documents?version=1", "Version 1");
    await visit("/console/sites/news/impact", /Impact of publishing news/);
    await visit("/console/audit", "Audit log");
    await visit("/console/audit?site=news", "Audit log of news");
    await visit("/console/sites/nowhere/keys", "Not found");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await context.close();
  }, 120_000);

  it("shows the audit log in words, newest first, with the raw record beside", async () => {
    const { context, page } = await signedIn("ada@example.com");
    await page.goto(`${origin}/console/audit?site=news`);
    const rows = page.getByRole("row");
    await rows.filter({ hasText: "key 'Styled key' issued on site news by ada@example.com" }).waitFor();
    expect(await rows.filter({ hasText: "key 'Styled key' revoked on site news by ada@example.com" }).count()).toBe(1);
    const staged = rows.filter({ hasText: /document version \d+ staged on site news by ada@example.com/ }).first();
    expect(await staged.textContent()).toContain("POST /tenants/:tenant/sites/:site/deploy");
    await shot(page, "audit", true);
    await context.close();
  });

  it("ran without a script error or a Content-Security-Policy violation", () => {
    expect(errors).toEqual([]);
  });
});
