import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { openDatabase } from "../../db/client";
import { basicDocument, subscribeJourney } from "../fixtures/documents";
import { consoleMailbox } from "../helpers/console";
import { freshDatabase, type StoreKind } from "../helpers/databases";
import { type Harness, type Served, seedSite, serveHarness, startHarness } from "../helpers/harness";
import { consoleVisit, NGINX_SOURCE, type Nginx, startNginx } from "../helpers/nginx";
import { HOST, ORIGIN, READER_A, READER_B, READER_C, readersThrough } from "./behind-nginx.fixture";

/**
 * The publisher's way (issue 35, item 5): Debian's nginx terminates TLS for news.example and
 * proxies `/svc/` and `/console` to two server processes on one store, taken in turn, configured
 * as docs/deploying.md says; the service trusts exactly nginx's address. Readers connect from
 * their own loopback addresses. A "process" is a harness of its own (its own deps, windows,
 * outbox and clock) listening on its own port, over the embedded store; on a Postgres server the
 * same is tested with two real server processes (`behind-nginx.processes.test.ts`).
 */
describe.each(["embedded" as StoreKind])(
  "behind nginx terminating TLS, two processes (%s store)",
  (kind: StoreKind) => {
    let h: Harness;
    let second: Harness;
    let nginx: Nginx;
    const servers: Served[] = [];
    const cleanups: (() => Promise<void>)[] = [];
    const box = consoleMailbox();
    const options = { mailTransport: box.transport, config: { SVC_TRUSTED_PROXIES: NGINX_SOURCE } };

    beforeAll(async () => {
      const db = await freshDatabase(kind);
      cleanups.push(() => db.drop());
      h = await startHarness(db, options);
      expect((await h.admin("POST", "/admin/tenants", { id: "default", default: true, hosts: [HOST] })).status).toBe(
        201,
      );
      const doc = basicDocument();
      (doc.features as Record<string, unknown>).subscribe = subscribeJourney();
      await seedSite(h, "news", doc);
      expect(
        (await h.admin("POST", "/admin/tenants/default/console-users", { email: "ada@example.com", role: "admin" }))
          .status,
      ).toBe(200);
      // The second process, started once the site is deployed: on a server, with connections of its own.
      if (db.url === null) second = await startHarness(db, options);
      else {
        const own = await openDatabase({ url: db.url });
        cleanups.unshift(() => own.close());
        second = await startHarness(own, options);
      }
      cleanups.unshift(
        () => second.stop(),
        () => h.stop(),
      );
      for (const process of [h, second]) {
        servers.push(serveHarness(process));
      }
      nginx = await startNginx(
        servers.map((s) => s.port),
        HOST,
      );
    }, 60_000);
    afterAll(async () => {
      await nginx?.stop();
      for (const server of servers) await server.stop();
      for (const cleanup of cleanups) await cleanup();
    }, 60_000);

    const readers = readersThrough(() => nginx);
    const { send, decide } = readers;
    /** A window of its own for each test, on both processes' clocks. */
    const nextWindow = () => {
      const start = Math.ceil(h.clock.now() / 10_000) * 10_000 + 10_000 + 1_000;
      h.clock.set(start);
      second.clock.set(start);
    };
    /**
     * Sends a reader's decide calls until both processes refuse in a row; how many were admitted.
     * On the embedded store the browser windows are per process (two app instances over one
     * store stand for a second process here): they admit between 200 and 2 × 200 per reader.
     */
    const spend = async (from: string, headers: () => Record<string, string>) => {
      let admitted = 0;
      let refusedInRow = 0;
      while (refusedInRow < 2 && admitted <= 400) {
        const answer = await decide(from, headers());
        if (answer.status === 200) {
          admitted++;
          refusedInRow = 0;
        } else {
          expect(answer.status).toBe(429);
          expect(answer.headers["retry-after"]).toBe("9");
          refusedInRow++;
        }
      }
      return admitted;
    };
    /** Browser decide calls a process answered 200 (its request metrics, counted by its transport). */
    const answeredDecides = (process: Harness) =>
      [...process.deps.requests.routes()]
        .find((r) => r.method === "POST" && r.route === "/svc/v1/decide")
        ?.byStatus.get(200)?.count ?? 0;
    /**
     * The mail to `address`, drained (by either process) until it is sent: a drain the outbox's
     * timer began before the mail was written is shared by the next `drain()` call and does not send it.
     */
    const mailTo = async (address: string) => {
      for (let attempt = 0; attempt < 20; attempt++) {
        // A console sign-in's mail is written by a job (the same work whatever the address).
        await h.deps.jobs.runDue();
        await second.deps.jobs.runDue();
        await h.deps.outbox.drain();
        await second.deps.outbox.drain();
        const mail = box.mails.filter((m) => m.to === address).at(-1);
        if (mail !== undefined) return mail;
      }
      throw new Error(`no mail to ${address}`);
    };

    it("gives two readers from two addresses their own browser windows (200 per 10 s in each process)", async () => {
      nextWindow();
      const admitted = await spend(READER_A, () => ({}));
      expect(admitted).toBeGreaterThanOrEqual(200);
      expect(admitted).toBeLessThanOrEqual(400);
      // The other reader behind the same nginx still has all of theirs.
      for (let i = 0; i < 20; i++) expect((await decide(READER_B)).status).toBe(200);
      // nginx took both processes in turn.
      for (const process of [h, second]) expect(answeredDecides(process)).toBeGreaterThan(100);
    });

    it("keeps a reader in their windows whatever X-Forwarded-For they send", async () => {
      nextWindow();
      let n = 0;
      const admitted = await spend(READER_C, () => ({ "x-forwarded-for": `198.51.100.${n++ % 250}` }));
      expect(admitted).toBeGreaterThanOrEqual(200);
      expect(admitted).toBeLessThanOrEqual(400);
      for (const forged of ["203.0.113.77", NGINX_SOURCE, "203.0.113.78", "::1"]) {
        expect((await decide(READER_C, { "x-forwarded-for": forged })).status).toBe(429);
      }
    });

    it("mails a reader's sign-in link on the publisher's https origin, and its cookies work there", async () => {
      const jar = await readers.signInByMagicLink(async (address) => (await mailTo(address)).text);
      await readers.expectSession(jar);
    });

    it("signs in to the console over HTTPS and accepts its forms", async () => {
      const browse = consoleVisit((method, path, headers, body) => send(READER_B, method, path, headers, body), ORIGIN);
      expect((await browse("GET", "/console/sign-in")).status).toBe(200);
      expect((await browse("POST", "/console/sign-in", { email: "ada@example.com" })).status).toBe(200);
      await mailTo("ada@example.com");
      const link = new URL(box.lastLink("ada@example.com"));
      expect(link.origin).toBe(ORIGIN);
      expect((await browse("GET", `${link.pathname}${link.search}`)).status).toBe(200);
      const done = await browse("POST", "/console/auth", { token: link.searchParams.get("token") as string });
      expect(done.status).toBe(303);
      expect(done.headers.location).toBe("/console");
      expect((await browse("GET", "/console")).status).toBe(200);
      expect((await browse("POST", "/console/sites", { id: "via-nginx" })).status).toBe(201);
      const sites = (await (await h.admin("GET", "/admin/tenants/default/sites")).json()) as {
        sites: { id: string }[];
      };
      expect(sites.sites.map((s) => s.id)).toContain("via-nginx");
    });

    it("redirects forward to the journey's destination", async () => {
      await readers.expectForward();
    });

    it("answers CORS for the site's own origin only", async () => {
      await readers.expectPreflightAllowed();
      await readers.expectPreflightRefused();
    });
  },
);
