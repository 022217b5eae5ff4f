import { describe, expect, test } from "bun:test";
import { waitUntilQuiet } from "../../bench/proc";

/** A child that keeps one core busy for `busyMs`, then idles until killed. */
function busyThenIdle(busyMs: number) {
  return Bun.spawn(
    [
      process.execPath,
      "-e",
      `const end = Date.now() + ${busyMs}; while (Date.now() < end) {} setInterval(() => {}, 1000);`,
    ],
    { stdout: "ignore", stderr: "inherit" },
  );
}

describe("bench: waiting for a server to go quiet", () => {
  test("waits while the process keeps a core busy, and returns once it idles", async () => {
    const child = busyThenIdle(2_500);
    try {
      const t0 = performance.now();
      const waited = await waitUntilQuiet(child.pid, 15);
      expect(waited.quiet).toBe(true);
      // At least one busy one-second sample came before the quiet one.
      expect(waited.seconds).toBeGreaterThanOrEqual(2);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(2_000);
    } finally {
      child.kill("SIGKILL");
    }
  }, 30_000);

  test("gives up at its limit when the process never idles, and says so", async () => {
    const child = busyThenIdle(60_000);
    try {
      const waited = await waitUntilQuiet(child.pid, 2);
      expect(waited).toEqual({ seconds: expect.any(Number), quiet: false });
      expect(waited.seconds).toBeGreaterThanOrEqual(2);
      expect(waited.seconds).toBeLessThan(4);
    } finally {
      child.kill("SIGKILL");
    }
  }, 30_000);

  test("does not wait for a process that has exited", async () => {
    const child = Bun.spawn([process.execPath, "-e", "0"], { stdout: "ignore", stderr: "inherit" });
    await child.exited;
    const waited = await waitUntilQuiet(child.pid, 10);
    expect(waited).toEqual({ seconds: expect.any(Number), quiet: false });
    expect(waited.seconds).toBeLessThan(1);
  });
});
