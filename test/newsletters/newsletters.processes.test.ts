import { describe, expect, it } from "bun:test";
import { openDatabase } from "../../db/client";
import { SYNC_JOB } from "../../src/newsletters/sync";
import { storeKinds } from "../helpers/databases";
import { type Harness, startHarness } from "../helpers/harness";
import { startSecondProcess, within } from "../helpers/second-process";
import { newsletterSuiteWorld } from "./fixture";

describe.each(storeKinds)("newsletters across processes (%s store)", (kind) => {
  const w = newsletterSuiteWorld(kind);

  it("a standing written in one process drops the standings another holds for decisions", async () => {
    const second = await startSecondProcess(w.db, w.h);
    try {
      const ann = await w.person("ann@example.com");
      const prompt = async (h: Harness) => {
        const res = await h.request("POST", "/v1/decide", {
          headers: { "x-svc-site-id": "news", "x-api-key": w.key },
          body: { features: ["prompt"], userId: ann.userId },
        });
        return (await res.json()).decisions.prompt.outcome as string;
      };
      expect(await prompt(second.harness)).toBe("show");
      await w.call("PUT", "subscriptions", { headers: { cookie: ann.cookie }, body: { subscribed: [w.ids.daily] } });
      await within(5_000, async () => (await prompt(second.harness)) === "hide");
    } finally {
      await second.harness.stop();
      await second.close();
    }
  });

  it("a sync owed while the vendor was down survives a restart and is sent by the next process", async () => {
    const bob = await w.person("bob@example.com");
    w.listmonk.state.mode = "down";
    await w.call("PUT", "subscriptions", { headers: { cookie: bob.cookie }, body: { subscribed: [w.ids.weekly] } });
    await w.h.deps.jobs.runDue();
    expect((await w.h.deps.jobs.statsOf(SYNC_JOB)).queued).toBe(1);
    await w.h.stop();
    w.listmonk.state.mode = "ok";
    const own = w.db.url ? await openDatabase({ url: w.db.url }) : null;
    const next = await startHarness(own ?? w.db, { serviceEnv: { LISTMONK_PASSWORD: w.listmonk.password } });
    try {
      next.clock.set(w.h.clock.now() + 10 * 60_000);
      await next.deps.jobs.runDue();
      expect((await next.deps.jobs.statsOf(SYNC_JOB)).depth).toBe(0);
      expect(w.listmonk.membersOf(w.ids.weekly)["bob@example.com"]).toBe("confirmed");
    } finally {
      await next.stop();
      await own?.close();
    }
  });
});
