import { describe, expect, it } from "bun:test";
import { join } from "node:path";
import { createLogger } from "../src/logger";

/** Runs a few log calls in a child process and answers what it printed on stdout. */
function printed(format: "json" | "pretty"): string {
  const script = `
    const { createLogger } = await import(${JSON.stringify(join(import.meta.dir, "../src/logger.ts"))});
    const log = createLogger("info", undefined, undefined, ${JSON.stringify(format)});
    log.debug("not shown");
    log.info("listening", { port: 3000, store: "embedded" });
    log.warn("mail budget nearly spent", { scope: "site" });
  `;
  const child = Bun.spawnSync([process.execPath, "-e", script], { env: { ...process.env, NO_COLOR: "1" } });
  expect(child.exitCode).toBe(0);
  return child.stdout.toString();
}

describe("the logger (pino)", () => {
  it("writes one JSON object a line: level by name, ISO time, the message first, then the fields", () => {
    const lines: string[] = [];
    const log = createLogger("debug", (line) => lines.push(line), { worker: 1 });
    log.info("listening", { port: 3000 });
    log.error("unclean stop");
    expect(lines).toHaveLength(2);
    const first = JSON.parse(lines[0] as string);
    expect(first).toEqual({ level: "info", time: first.time, worker: 1, message: "listening", port: 3000 });
    expect(new Date(first.time).toISOString()).toBe(first.time);
    expect(lines[0]).toContain('"message":"listening","port":3000');
    expect(JSON.parse(lines[1] as string)).toMatchObject({ level: "error", message: "unclean stop" });
  });

  it("leaves out what is below its level, and everything when silent", () => {
    const lines: string[] = [];
    const warn = createLogger("warn", (line) => lines.push(line));
    warn.debug("d");
    warn.info("i");
    warn.warn("w");
    expect(lines.map((l) => JSON.parse(l).message)).toEqual(["w"]);
    const silent = createLogger("silent", (line) => lines.push(line));
    silent.error("e");
    expect(lines).toHaveLength(1);
  });

  it("prints JSON lines on stdout in production", () => {
    const out = printed("json").trim().split("\n");
    expect(out.map((l) => JSON.parse(l).message)).toEqual(["listening", "mail budget nearly spent"]);
  });

  it("prints readable lines in development (pino-pretty)", () => {
    const out = printed("pretty");
    expect(out).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: listening\n\s+port: 3000\n\s+store: "embedded"\n/);
    expect(out).toContain("WARN: mail budget nearly spent");
    expect(out).not.toContain("not shown");
    expect(out).not.toContain("{");
  });
  it("throttles a warning per logger and message, counting the lines it left out", () => {
    const lines: string[] = [];
    const logger = createLogger("info", (line) => lines.push(line));
    const other = createLogger("info", (line) => lines.push(line));
    const HOUR = 3_600_000;
    logger.warnAtMostEvery(HOUR, "store unavailable", { reason: "refused" });
    logger.warnAtMostEvery(HOUR, "store unavailable", { reason: "refused" });
    logger.warnAtMostEvery(HOUR, "store unavailable", { reason: "refused" });
    // Another message, and another logger (another app in the same process), have their own.
    logger.warnAtMostEvery(HOUR, "something else");
    other.warnAtMostEvery(HOUR, "store unavailable");
    // Once the interval has passed (0 here), the next line counts the two left out.
    logger.warnAtMostEvery(0, "store unavailable", { reason: "refused" });
    expect(lines.map((l) => [JSON.parse(l).message, JSON.parse(l).unlogged])).toEqual([
      ["store unavailable", 0],
      ["something else", 0],
      ["store unavailable", 0],
      ["store unavailable", 2],
    ]);
  });
});
