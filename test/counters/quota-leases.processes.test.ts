import { describe, expect, it } from "bun:test";
import { storeKinds } from "../helpers/databases";
import { OPERATOR_TOKEN } from "../helpers/harness";
import type { ServerProcess } from "../helpers/process";
import { scratchDir } from "../helpers/scratch-dirs";
import { within } from "../helpers/second-process";
import { twoServerProcesses } from "../helpers/server-processes";

const WINDOW_MS = 10_000;

describe.each(storeKinds.filter((kind) => kind === "server"))(
  "keyed rate windows across two processes (%s store)",
  () => {
    // The first process seeds the demo site and prints its key; the second seeds nothing.
    const w = twoServerProcesses(
      (url, index) => ({
        SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
        SVC_SECRET: "lease-test-secret-lease-test-secret-0",
        DATABASE_URL: url,
        SVC_SEED_DEMO: index === 0 ? "1" : "0",
        SVC_DATA_DIR: scratchDir("svc-lease-"),
      }),
      async (first) => {
        await within(30_000, async () => /Bearer (svc_[^']+)'/.test(first.output()));
        return (first.output().match(/Bearer (svc_[^']+)'/) as RegExpMatchArray)[1] as string;
      },
    );

    /** Offers `total` decisions for one key, alternating between the processes, `parallel` at a time. */
    async function offer(total: number, parallel: number) {
      const statuses: number[] = [];
      const retryAfter: number[] = [];
      let next = 0;
      const worker = async () => {
        for (let i = next++; i < total; i = next++) {
          const server = w.servers[i % w.servers.length] as ServerProcess;
          const response = await fetch(`${server.url}/v1/decide`, {
            method: "POST",
            headers: { "x-svc-site-id": "demo", authorization: `Bearer ${w.key}`, "content-type": "application/json" },
            body: JSON.stringify({ features: ["newsletter_prompt"], deviceId: `device-${i % 50}` }),
          });
          await response.arrayBuffer();
          statuses.push(response.status);
          if (response.status === 429) retryAfter.push(Number(response.headers.get("retry-after")));
        }
      };
      await Promise.all(Array.from({ length: parallel }, worker));
      return { statuses, retryAfter };
    }

    it("admits exactly 2,000 per window for one key under load split across both, refusing the rest with Retry-After", async () => {
      // Start at a window's beginning so the whole offer falls in one window (retried once if not).
      for (let attempt = 0; attempt < 2; attempt++) {
        await Bun.sleep(WINDOW_MS - (Date.now() % WINDOW_MS) + 20);
        const window = Math.floor(Date.now() / WINDOW_MS);
        const { statuses, retryAfter } = await offer(3_000, 16);
        if (Math.floor(Date.now() / WINDOW_MS) !== window) continue;
        expect(statuses.filter((s) => s === 200).length).toBe(2_000);
        expect(statuses.filter((s) => s === 429).length).toBe(1_000);
        expect(retryAfter.every((s) => s >= 1 && s <= 10)).toBe(true);
        return;
      }
      throw new Error("the offer never fitted in one 10-second window");
    }, 60_000);
  },
);
