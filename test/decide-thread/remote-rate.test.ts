/**
 * Keyed decide's window held by the request thread, taken from the main thread (OFREP spends it
 * too: src/decide-thread/remote-rate.ts), over a MessageChannel's two ports.
 */
import { afterEach, describe, expect, it } from "bun:test";
import { RateWindows } from "../../src/counters/rate-windows";
import { Channel, type Endpoint } from "../../src/decide-thread/channel";
import { serveRate, threadRate } from "../../src/decide-thread/remote-rate";

const open: MessagePort[] = [];
afterEach(() => {
  for (const port of open.splice(0)) port.close();
});

describe("keyed decide's window taken across threads", () => {
  it("admits up to the thread's limit, then answers Retry-After, with what is left after each take", async () => {
    const { port1, port2 } = new MessageChannel();
    open.push(port1, port2);
    const windows = new RateWindows(2, 10_000);
    serveRate(new Channel(port2 as unknown as Endpoint), windows);
    const rate = threadRate(new Channel(port1 as unknown as Endpoint), 2, 10_000);
    expect([rate.limit, rate.windowMs]).toEqual([2, 10_000]);
    const now = 1_000_000;
    // The thread's own keyed decide spends the same window.
    expect(windows.take("key-1", now)).toBe(0);
    expect(await rate.take("key-1", now)).toBe(0);
    expect(rate.remaining("key-1", now)).toBe(0);
    const refused = await rate.take("key-1", now + 1);
    expect(refused).toBeGreaterThan(0);
    // Another key's window is its own.
    expect(await rate.take("key-2", now)).toBe(0);
    expect(rate.remaining("key-2", now)).toBe(1);
  });
});
