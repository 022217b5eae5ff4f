import { describe, expect, it } from "bun:test";
import { giftDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { OPERATOR_TOKEN } from "../helpers/harness";
import type { ServerProcess } from "../helpers/process";
import { scratchDir } from "../helpers/scratch-dirs";
import { seedServerSite, twoServerProcesses } from "../helpers/server-processes";

/**
 * Two real server processes on one Postgres server (`giftDocument`: `basicDocument` with gift
 * links). However a reader's requests are spread over both at once: a seen meter of 3 articles a
 * month lets exactly 3 distinct articles through; a count meter of 2 calls a day exactly 2 calls;
 * a gift link for 2 readers exactly 2 readers.
 */
describe.if(Boolean(process.env.DATABASE_URL))(
  "meters and gift caps across two server processes (server store)",
  () => {
    const w = twoServerProcesses(
      (url) => ({
        SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
        SVC_SECRET: "exact-seen-secret-exact-seen-secret-0",
        DATABASE_URL: url,
        SVC_SEED_DEMO: "0",
        SVC_DATA_DIR: scratchDir("svc-seen-"),
      }),
      (first) => seedServerSite(first, giftDocument(), "seen test"),
    );

    const post = (server: ServerProcess, path: string, body: unknown) =>
      fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { "x-svc-site-id": "news", authorization: `Bearer ${w.key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const decide = async (server: ServerProcess, reader: string, article: string, giftLink?: string) => {
      const res = await post(server, "/v1/decide", {
        features: ["paywall"],
        deviceId: reader,
        content: signedContent({ id: article, section: "news" }),
        ...(giftLink === undefined ? {} : { giftLink }),
      });
      expect(res.status).toBe(200);
      return (await res.json()).decisions.paywall.outcome as string;
    };
    const teaser = async (server: ServerProcess, reader: string) => {
      const res = await post(server, "/v1/decide", { features: ["teaser"], deviceId: reader });
      expect(res.status).toBe(200);
      return (await res.json()).decisions.teaser.outcome as string;
    };
    /** Both at once, alternating: `n` calls of `call` spread over the two processes. */
    const spread = <T>(n: number, call: (server: ServerProcess, i: number) => Promise<T>) =>
      Promise.all(Array.from({ length: n }, (_, i) => call(w.servers[i % 2] as ServerProcess, i)));

    it("lets exactly the allowance through, with twelve new articles spread over both at once", async () => {
      // Both processes hold the reader first (an article each), then the rest arrives at once.
      const a = w.servers[0] as ServerProcess;
      const b = w.servers[1] as ServerProcess;
      const first = [await decide(a, "reader", "first-a"), await decide(b, "reader", "first-b")];
      const rest = await Promise.all(
        Array.from({ length: 12 }, (_, i) => decide(i % 2 === 0 ? a : b, "reader", `article-${i}`)),
      );
      expect([...first, ...rest].filter((outcome) => outcome === "metered").length).toBe(3);
      // Articles already let through stay readable on either process; a new one does not.
      expect(await decide(b, "reader", "first-a")).toBe("metered");
      expect(await decide(a, "reader", "first-b")).toBe("metered");
      expect(await decide(a, "reader", "one-more")).not.toBe("metered");
    }, 60_000);

    it("lets exactly a count meter's allowance through, with twenty calls spread over both at once", async () => {
      // Both processes hold the caller first (read, not ticked: a call to another feature).
      for (const server of w.servers) expect(await decide(server, "caller", "warm-up")).toBe("metered");
      for (let round = 0; round < 3; round++) {
        const reader = `caller-${round}`;
        const outcomes = await spread(20, (server) => teaser(server, reader));
        expect(outcomes.filter((o) => o === "on").length).toBe(2);
        expect(await teaser(w.servers[round % 2] as ServerProcess, reader)).toBe("off");
      }
    }, 60_000);

    it("lets exactly a gift link's cap of readers in, with ten new readers spread over both at once", async () => {
      const a = w.servers[0] as ServerProcess;
      for (let round = 0; round < 3; round++) {
        const user = await fetch(`${a.url}/admin/tenants/default/users`, {
          method: "POST",
          headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ email: `gifter-${round}@example.com` }),
        });
        expect(user.status).toBe(201);
        const gifter = ((await user.json()) as { user: { id: string } }).user.id;
        const minted = await post(a, "/v1/gift-links", { userId: gifter, contentId: `gifted-${round}` });
        expect(minted.status).toBe(201);
        const { token } = (await minted.json()) as { token: string };
        const outcomes = await spread(10, (server, i) =>
          decide(server, `recipient-${round}-${i}`, `gifted-${round}`, token),
        );
        expect(outcomes.filter((o) => o === "gifted").length).toBe(2);
        // A reader let in reads it again on the other process; one more reader is not let in.
        const first = outcomes.indexOf("gifted");
        const again = w.servers[(first + 1) % 2] as ServerProcess;
        expect(await decide(again, `recipient-${round}-${first}`, `gifted-${round}`, token)).toBe("gifted");
        expect(await decide(again, `late-${round}`, `gifted-${round}`, token)).not.toBe("gifted");
      }
    }, 60_000);
  },
);
