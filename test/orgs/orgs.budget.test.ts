import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { quotedData } from "../../src/orgs/invitation-mail";
import { storeKinds } from "../helpers/databases";
import { type OrgWorld, orgWorld, type Person } from "./fixture";

const HOUR = 3_600_000;

describe.each(storeKinds)("invitations spend the mail budget (%s store)", (kind) => {
  let w: OrgWorld;
  let owner: Person;
  let orgId: string;

  beforeAll(async () => {
    // 50 racing invitations queue behind each other's transactions on the embedded store: reads
    // get the time to wait (the read deadline is not what this file tests).
    w = await orgWorld(kind, { SVC_READ_DEADLINE_MS: "30000" });
    owner = await w.person("owner@example.com");
    orgId = (await w.organization("Acme", "acme", owner)).id;
  }, 60_000);
  afterAll(() => w.stop(), 60_000);

  const nextHour = () => w.h.clock.advance(HOUR - (w.h.clock.now() % HOUR));
  const invite = (by: Person, email: string, extra: Record<string, unknown> = {}) =>
    w.call(by, "POST", "/org/invite-member", { email, role: "member", organizationId: orgId, ...extra });
  const queued = async (pattern: string) =>
    rowsOf<{ n: number }>(
      await w.db.db.execute(sql`select count(*)::int as n from mail_outbox where recipient like ${pattern}`),
    )[0]!.n;
  const pending = async (email: string) =>
    rowsOf<{ n: number }>(
      await w.db.db.execute(
        sql`select count(*)::int as n from invitations where email = ${email} and status = 'pending'`,
      ),
    )[0]!.n;

  it("caps 50 invitations to one address at the mailbox's 3 an hour; a refused one writes nothing", async () => {
    nextHour();
    const statuses: number[] = [];
    const remaining: (string | null)[] = [];
    for (let i = 0; i < 50; i++) {
      const res = await invite(owner, "target@example.com", { resend: true });
      statuses.push(res.status);
      if (res.status === 200) remaining.push(res.headers.get("ratelimit"));
    }
    // The draft's RateLimit fields name the inviter's own budget on a mailed invitation.
    expect(remaining).toEqual([
      '"invitation-inviter";r=29;t=3600',
      '"invitation-inviter";r=28;t=3600',
      '"invitation-inviter";r=27;t=3600',
    ]);
    expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
    expect(statuses.slice(3).every((s) => s === 429)).toBe(true);
    expect(await queued("target@%")).toBe(3);
    const listed = await (await w.call(owner, "GET", `/org/list-invitations?organizationId=${orgId}`)).json();
    // Three invitations were made (two superseded); the 47 refused made none.
    expect(listed.invitations.filter((i: { email: string }) => i.email === "target@example.com")).toHaveLength(3);
    expect(await pending("target@example.com")).toBe(1);
    const refused = await invite(owner, "target@example.com", { resend: true });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBe(3600);
    expect(refused.headers.get("ratelimit-policy")).toBe('"invitation-mailbox";q=3;w=3600');
    expect(refused.headers.get("ratelimit")).toBe('"invitation-mailbox";r=0;t=3600');
    expect((await refused.json()).error.code).toBe("rate_limited");
  });

  it("caps 50 racing invitations to +tag variants of one mailbox at 3", async () => {
    nextHour();
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => invite(owner, `Variant+${i}@example.com`)));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(3);
    expect(answers.filter((r) => r.status === 429)).toHaveLength(47);
    expect(await queued("variant%")).toBe(3);
  });

  it("caps one inviter at 30 invitation mails an hour", async () => {
    nextHour();
    const admin = await w.person("admin-inviter@example.com");
    const added = await w.call(owner, "POST", "/org/invite-member", {
      email: admin.email,
      role: "admin",
      organizationId: orgId,
    });
    expect(added.status).toBe(200);
    const accepted = await w.call(admin, "POST", "/org/accept-invitation", { invitationId: (await added.json()).id });
    expect(accepted.status).toBe(200);
    for (let i = 0; i < 30; i++) expect((await invite(admin, `team-${i}@example.com`)).status).toBe(200);
    expect((await invite(admin, "team-30@example.com")).status).toBe(429);
    expect(await pending("team-30@example.com")).toBe(0);
    // Another inviter of the organization has a budget of its own.
    expect((await invite(owner, "team-30@example.com")).status).toBe(200);
  });

  it("opens with our subject and first line; the display name comes later, quoted and not a link", async () => {
    nextHour();
    const hostile = "Your bank: verify at https://evil.example/login";
    const named = await w.call(owner, "PATCH", "/id/user-details", { name: hostile });
    expect(named.status).toBe(200);
    expect((await invite(owner, "reader@example.com")).status).toBe(200);
    // A drain already under way may have started before this mail's row committed: drain again.
    await w.h.deps.outbox.drain();
    await w.h.deps.outbox.drain();
    await w.smtp.waitFor(await queued("%"));
    const mail = w.smtp.received.find((m) => m.to.includes("reader@example.com"));
    const split = mail!.text.indexOf("\r\n\r\n");
    const head = mail!.text.slice(0, split).replace(/\r\n[ \t]+/g, " ");
    const body = mail!.text.slice(split + 4);
    expect(head).toContain("\r\nSubject: You have an invitation to join an organization\r\n");
    expect(body.split(/\r?\n/)[0]).toBe("You have been invited to join an organization as member.");
    expect(body.indexOf("Your bank")).toBeGreaterThan(body.indexOf("/org/invitation?"));
    expect(body).not.toContain("evil.example");
    expect(body).toContain('Invited by: "Your bank: verify at https[:]//evil[.]example/login"');
  });
});

describe("quotedData", () => {
  it.each([
    ["J. Smith", '"J. Smith"'],
    ["https://evil.example/x", '"https[:]//evil[.]example/x"'],
    ["ceo@bank.example", '"ceo[at]bank[.]example"'],
    ["line\r\nbreak\u0000", '"line break"'],
    ['say "hi"', "\"say 'hi'\""],
    ["x".repeat(100), `"${"x".repeat(80)}…"`],
  ])("quotes %j as %s", (input, expected) => {
    expect(quotedData(input)).toBe(expected);
  });
});
