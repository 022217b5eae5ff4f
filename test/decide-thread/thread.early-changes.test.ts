/**
 * A change the main thread applies while the decide thread is still loading reaches the thread
 * before it answers: the thread queues it and applies it once loaded (src/decide-thread/thread.ts,
 * `early`). Here a key is revoked after the thread has read the keys and before it listens; the
 * thread's last read at start (the revoked gifts) is held until then, so the order is certain.
 */
import { expect, it } from "bun:test";
import { createApp } from "../../src/app";
import { openDecideThread } from "../../src/decide-thread/start";
import type { NodeServerHandle } from "../../src/http/node-server";
import { freshDatabase } from "../helpers/databases";
import { seedSite, startHarness } from "../helpers/harness";
import { DOCUMENT } from "./document";

it("applies a key revoked while the thread loads before it answers with that key", async () => {
  const database = await freshDatabase("embedded");
  const h = await startHarness(database, { config: { SVC_DECIDE_THREAD: "on" } });
  let server: NodeServerHandle | null = null;
  try {
    const revoked = await seedSite(h, "news", DOCUMENT);
    const issued = await h.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "kept" });
    expect(issued.status).toBe(201);
    const kept = (await issued.json()) as { key: string };

    // The thread reads the revoked gifts after the keys: that read waits until the key is revoked.
    const store = h.deps.giftStore;
    const revokedSince = store.revokedSince.bind(store);
    let reached = () => {};
    const reading = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    store.revokedSince = async (now) => {
      reached();
      await held;
      return revokedSince(now);
    };

    const thread = openDecideThread(h.deps);
    const serving = thread.serve(createApp({ ...h.deps, ...thread.routes }), 0);
    await reading;
    // Applied here before it returns, and passed on to the thread (still loading) meanwhile.
    await h.deps.keys.revoke("default", "news", revoked.keyId, h.clock.now());
    release();
    const app = await serving;
    server = app.server as NodeServerHandle;

    const decide = (key: string) =>
      fetch(`http://127.0.0.1:${server?.port}/v1/decide`, {
        method: "POST",
        headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ features: ["paywall"], deviceId: "early-change-reader" }),
      });
    const refused = await decide(revoked.key);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
    // The thread serves: the key that was not revoked is answered.
    const answered = await decide(kept.key);
    expect(answered.status).toBe(200);
    expect(((await answered.json()) as { decisions: { paywall: { outcome: string } } }).decisions.paywall.outcome).toBe(
      "open",
    );
  } finally {
    await server?.stop();
    await h.stop();
    await database.drop();
  }
}, 30_000);
