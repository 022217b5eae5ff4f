/**
 * The channel between the request thread and the main thread (src/decide-thread/channel.ts),
 * over a MessageChannel's two ports: the same structured cloning a Worker's messages get.
 */
import { afterEach, describe, expect, it } from "bun:test";
import { Channel, type Endpoint, remoteOf } from "../../src/decide-thread/channel";
import { StoreUnavailable } from "../../src/infra/deadline";
import { AppError } from "../../src/infra/errors";

const open: MessagePort[] = [];
afterEach(() => {
  for (const port of open.splice(0)) port.close();
});

/** Two channels, one on each end of a new MessageChannel. */
function pair(): [Channel, Channel] {
  const { port1, port2 } = new MessageChannel();
  open.push(port1, port2);
  return [new Channel(port1 as unknown as Endpoint), new Channel(port2 as unknown as Endpoint)];
}

interface Rows {
  byId(id: string): Promise<{ id: string; at: Date; seen: Map<string, number> } | undefined>;
  refuse(kind: string): Promise<never>;
}

describe("the request thread's channel", () => {
  it("answers a call with what the served method returned, rows, Dates and Maps intact", async () => {
    const [here, there] = pair();
    there.serve("rows", {
      prefix: "row-",
      async byId(this: { prefix: string }, id: string) {
        return id === "7" ? { id: this.prefix + id, at: new Date(1_000), seen: new Map([["a", 1]]) } : undefined;
      },
    });
    const rows = remoteOf<Rows>(here, "rows");
    const row = await rows.byId("7");
    expect(row?.id).toBe("row-7");
    expect(row?.at).toEqual(new Date(1_000));
    expect(row?.seen.get("a")).toBe(1);
    expect(await rows.byId("8")).toBeUndefined();
    // `in` finds every method (MeterCounters tells a store from a database that way).
    expect("byId" in rows).toBe(true);
  });

  it("rejects with the same error class and code the served method threw, so the envelope is the one-thread one", async () => {
    const [here, there] = pair();
    there.serve("rows", {
      refuse(kind: string) {
        if (kind === "unavailable") throw new StoreUnavailable("deadline");
        if (kind === "app") throw new AppError("not_found", "No such row.", [{ path: "/id" }]);
        return Promise.reject(new Error("reader r-1 broke it"));
      },
    });
    const rows = remoteOf<Rows>(here, "rows");
    const unavailable = await rows.refuse("unavailable").catch((error: unknown) => error);
    expect(unavailable).toBeInstanceOf(StoreUnavailable);
    expect((unavailable as StoreUnavailable).reason).toBe("deadline");
    expect((unavailable as StoreUnavailable).headers).toEqual({ "retry-after": expect.any(String) });
    const app = await rows.refuse("app").catch((error: unknown) => error);
    expect(app).toBeInstanceOf(AppError);
    expect(app).not.toBeInstanceOf(StoreUnavailable);
    expect((app as AppError).code).toBe("not_found");
    expect((app as AppError).details).toEqual([{ path: "/id" }]);
    const other = await rows.refuse("other").catch((error: unknown) => error);
    expect(other).not.toBeInstanceOf(AppError);
    expect((other as Error).message).toBe("reader r-1 broke it");
  });

  it("refuses a method that is not served, and every call once closed", async () => {
    const [here, there] = pair();
    there.serve("rows", { byId: async () => undefined });
    await expect(here.call("rows", "drop", [])).rejects.toThrow("no method rows.drop is served");
    await expect(here.call("tables", "byId", [])).rejects.toThrow("no method tables.byId is served");
    // A call in flight when the other side goes, and one after.
    there.serve("slow", { wait: () => new Promise(() => {}) });
    const waiting = here.call("slow", "wait", []);
    here.close(new Error("the request thread failed"));
    await expect(waiting).rejects.toThrow("the request thread failed");
    await expect(here.call("rows", "byId", ["1"])).rejects.toThrow("the request thread failed");
  });

  it("delivers events to their one handler, and none to a kind nobody handles", async () => {
    const [here, there] = pair();
    const seen: unknown[] = [];
    there.on("log", (payload) => seen.push(payload));
    here.emit("nobody", { x: 1 });
    here.emit("log", { level: "warn", message: "slow" });
    await Bun.sleep(20);
    expect(seen).toEqual([{ level: "warn", message: "slow" }]);
  });
});
