import { describe, expect, test } from "bun:test";
import { waitUntilRssSteady } from "../../bench/proc";

/**
 * A child that holds `chunks` buffers of 100 MB (every page written), prints "ready", then after
 * `holdMs` lets one go every `everyMs` (a full collection each), and idles once all are gone.
 */
function holdingThenFreeing(chunks: number, holdMs: number, everyMs: number) {
  const script = `
    const held = Array.from({ length: ${chunks} }, () => new Uint8Array(100 * 1024 * 1024).fill(1));
    console.log("ready");
    setTimeout(() => {
      const timer = setInterval(() => {
        held.pop();
        Bun.gc(true);
        if (held.length === 0) clearInterval(timer);
      }, ${everyMs});
    }, ${holdMs});
    setInterval(() => {}, 1000);`;
  const child = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "inherit" });
  const ready = (async () => {
    const reader = child.stdout.getReader();
    let out = "";
    while (!out.includes("ready")) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error("the child exited before it was ready");
      out += new TextDecoder().decode(chunk.value);
    }
  })();
  return { child, ready };
}

describe("bench: waiting for a server's memory to stop coming back", () => {
  test("waits while RSS falls, and reads it once it has held for two seconds", async () => {
    const { child, ready } = holdingThenFreeing(2, 1_500, 100);
    try {
      await ready;
      const waited = await waitUntilRssSteady(child.pid, 20);
      expect(waited.steady).toBe(true);
      // Read after the buffers went (200 MB held before), not before.
      expect(waited.rssMb).toBeLessThan(150);
      expect(waited.seconds).toBeGreaterThanOrEqual(3);
    } finally {
      child.kill("SIGKILL");
    }
  }, 30_000);

  test("gives up at its limit while RSS still falls, and says so", async () => {
    const { child, ready } = holdingThenFreeing(8, 0, 700);
    try {
      await ready;
      const waited = await waitUntilRssSteady(child.pid, 2);
      expect(waited.steady).toBe(false);
      expect(waited.seconds).toBeGreaterThanOrEqual(2);
      expect(waited.seconds).toBeLessThan(4);
      expect(waited.rssMb).toBeGreaterThan(150);
    } finally {
      child.kill("SIGKILL");
    }
  }, 30_000);

  test("counts growth as steady, and does not wait for a process that has exited", async () => {
    const { child, ready } = holdingThenFreeing(1, 60_000, 100);
    try {
      await ready;
      const waited = await waitUntilRssSteady(child.pid, 20);
      expect(waited.steady).toBe(true);
      expect(waited.seconds).toBeLessThan(4);
    } finally {
      child.kill("SIGKILL");
    }
    await child.exited;
    const gone = await waitUntilRssSteady(child.pid, 10);
    expect(gone.steady).toBe(false);
    expect(gone.seconds).toBeLessThan(1);
  }, 30_000);
});
