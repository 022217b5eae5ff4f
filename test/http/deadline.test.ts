import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { randomBytes, randomUUID } from "node:crypto";
import { connectionErrorCode, isConnectionError } from "../../db/connection-error";
import { errorResponseOf } from "../../src/http/error-envelope";
import { StoreUnavailable, withinDeadline } from "../../src/infra/deadline";
import { AppError } from "../../src/infra/errors";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase } from "../helpers/databases";
import { type Harness, memoryLogger, seedSite, startHarness } from "../helpers/harness";
import { mailbox, signIn } from "../helpers/sign-in";

/** A driver error as postgres.js raises it, wrapped the way drizzle wraps a failed query. */
function driverError(code: string): Error {
  const cause = Object.assign(new Error(`write ${code} 127.0.0.1:5432`), { code });
  return Object.assign(new Error("Failed query: select secret_column from users\nparams: reader@example.com"), {
    cause,
  });
}

describe("withinDeadline", () => {
  it("settles as the read does when it answers in time", async () => {
    expect(await withinDeadline(Promise.resolve(7), 1000)).toBe(7);
    const refused = new Error("refused");
    expect(withinDeadline(Promise.reject(refused), 1000)).rejects.toBe(refused);
  });

  it("rejects with 503 service_unavailable and Retry-After once the deadline passes", async () => {
    const started = performance.now();
    const error = await withinDeadline(new Promise(() => {}), 30).catch((e: unknown) => e);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    expect(error).toBeInstanceOf(StoreUnavailable);
    const res = errorResponseOf(memoryLogger(), new Request("http://localhost/v1/decide"), error);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(await res.json()).toMatchObject({
      error: { code: "service_unavailable", message: "The store did not answer in time; retry shortly." },
    });
  });

  it("ignores how a read ends after its deadline (no unhandled rejection)", async () => {
    let fail: (e: Error) => void = () => {};
    const late = new Promise<never>((_, reject) => {
      fail = reject;
    });
    await expect(withinDeadline(late, 5)).rejects.toBeInstanceOf(StoreUnavailable);
    fail(new Error("late failure"));
    // An unhandled rejection would be reported once this turn's microtasks have run: pass one turn
    // (waiting on the promise instead would handle the rejection and hide the fault).
    await new Promise<void>((turn) => setImmediate(turn));
  });
});

describe("connection-class store errors", () => {
  it.each([
    "ECONNREFUSED",
    "ECONNRESET",
    "ETIMEDOUT",
    "EPIPE",
    "CONNECT_TIMEOUT",
    "CONNECTION_CLOSED",
    "CONNECTION_ENDED",
    "CONNECTION_DESTROYED",
    "08006",
    "08001",
    "57P01",
    "57P02",
    "57P03",
    "53300",
  ])("takes %s (wrapped or not) for an outage", (code) => {
    expect(connectionErrorCode(driverError(code))).toBe(code);
    expect(isConnectionError(Object.assign(new Error(code), { code }))).toBe(true);
  });

  it.each(["23505", "42P01", "22021", "ERR_INVALID_ARG_TYPE"])("takes %s for a statement's failure", (code) => {
    expect(isConnectionError(driverError(code))).toBe(false);
  });
  it("takes errors without a code for statement failures", () => {
    expect(isConnectionError(new Error("boom"))).toBe(false);
    expect(isConnectionError("boom")).toBe(false);
    expect(isConnectionError(null)).toBe(false);
  });

  it("answers 503 with Retry-After and logs one warning without the query or its parameters", async () => {
    const logger = memoryLogger();
    const res = errorResponseOf(logger, new Request("http://localhost/v1/decide"), driverError("ECONNREFUSED"));
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("2");
    expect((await res.json()).error).toMatchObject({
      code: "service_unavailable",
      message: "The store is unavailable; retry shortly.",
    });
    expect(logger.lines).toHaveLength(1);
    const line = JSON.parse(logger.lines[0] as string);
    expect(line).toMatchObject({ level: "warn", message: "store unavailable", reason: "ECONNREFUSED" });
    expect(logger.lines[0]).not.toContain("secret_column");
    expect(logger.lines[0]).not.toContain("reader@example.com");
  });

  it("logs an outage at most once a second", () => {
    const logger = memoryLogger();
    const request = new Request("http://localhost/v1/decide");
    for (let i = 0; i < 5; i++) errorResponseOf(logger, request, driverError("ECONNRESET"));
    expect(logger.lines).toHaveLength(1);
  });

  it("still answers any other failure 500", () => {
    const logger = memoryLogger();
    const res = errorResponseOf(logger, new Request("http://localhost/x"), driverError("23505"));
    expect(res.status).toBe(500);
    expect(res.headers.get("retry-after")).toBeNull();
    expect(errorResponseOf(logger, new Request("http://localhost/x"), new AppError("not_found", "x")).status).toBe(404);
  });
});

/**
 * The deadline on the embedded store, where an outage cannot happen but a read can be slow:
 * the store's read methods are replaced by reads that never answer (or answer late).
 */
describe("reads on the request path have a deadline (embedded store)", () => {
  let h: Harness;
  let drop: () => Promise<void>;
  let key: string;
  const box = mailbox();
  const DEADLINE_MS = 100;

  beforeAll(async () => {
    const db = await freshDatabase("embedded");
    drop = db.drop;
    h = await startHarness(db, { config: { SVC_READ_DEADLINE_MS: String(DEADLINE_MS) }, mailTransport: box.transport });
    ({ key } = await seedSite(h, "news", basicDocument()));
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await drop();
  }, 60_000);

  const decide = (body: Record<string, unknown>, bearer = key) =>
    h.request("POST", "/v1/decide", { headers: { "x-svc-site-id": "news", authorization: `Bearer ${bearer}` }, body });

  /** Replaces a method of an object for the length of `run`. */
  async function replaced<T extends object>(target: T, name: string, fake: unknown, run: () => Promise<void>) {
    const holder = target as Record<string, unknown>;
    holder[name] = fake;
    try {
      await run();
    } finally {
      delete holder[name];
    }
  }

  const expectUnavailable = async (res: Response) => {
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("2");
    expect((await res.json()).error.code).toBe("service_unavailable");
  };

  it("answers 503 when a key that is not held cannot be read in time", async () => {
    await replaced(
      h.deps.keyStore,
      "byHash",
      () => new Promise(() => {}),
      async () => {
        await expectUnavailable(
          await decide({ features: ["teaser"], deviceId: "d-key" }, `svc_${randomBytes(24).toString("hex")}`),
        );
      },
    );
    // A held key is never read: served while the store hangs.
    await replaced(
      h.deps.keyStore,
      "byHash",
      () => new Promise(() => {}),
      async () => {
        expect((await decide({ features: ["section"] })).status).toBe(200);
      },
    );
  });

  it("answers 503 when a user's facts cannot be read in time", async () => {
    await replaced(
      h.deps.users,
      "usersWithGrants",
      () => new Promise(() => {}),
      async () => {
        await expectUnavailable(await decide({ features: ["paywall"], userId: randomUUID() }));
      },
    );
  });

  it("answers 503 when a meter value cannot be read in time, and never ticks it afterwards", async () => {
    let answer: (loaded: { count: number; items: null }) => void = () => {};
    const late = new Promise<{ count: number; items: null }>((resolve) => {
      answer = resolve;
    });
    await replaced(
      h.deps.meters,
      "loadEntry",
      () => late,
      async () => {
        await expectUnavailable(await decide({ features: ["teaser"], deviceId: "d-late" }));
      },
    );
    // The read answers after the request gave up: the value is held, and was not ticked.
    answer({ count: 0, items: null });
    // The load awaited `late` before this test does: its continuation (installing the value) runs first.
    await late;
    const res = await decide({ features: ["teaser"], deviceId: "d-late" });
    expect(res.status).toBe(200);
    expect((await res.json()).decisions.teaser.meters).toEqual({ calls: { allowance: 2, count: 0 } });
  });

  it("answers 503 on an identity route when the store fails with a connection error", async () => {
    const s = await signIn(h, box, "deadline@example.com");
    await replaced(
      h.deps.identityDeps.identity,
      "sessionByToken",
      () => Promise.reject(driverError("CONNECTION_CLOSED")),
      async () => {
        await expectUnavailable(
          await h.request("GET", "/v1/id/get-session", { headers: { "x-svc-site-id": "news", cookie: s.cookie } }),
        );
      },
    );
    const ok = await h.request("GET", "/v1/id/get-session", { headers: { "x-svc-site-id": "news", cookie: s.cookie } });
    expect((await ok.json()).user.id).toBe(s.userId);
  });
});
