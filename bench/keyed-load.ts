/**
 * The pinned bench's keyed decide load on one server, for the scripts that look inside it
 * (bench/profile-keyed.ts, bench/thread-cpu.ts): deploys the bench site, issues 300 keys, writes
 * 20,000 signed bodies (5 features each, 5,000 devices) and returns a wrk run of `seconds` on CPU 1
 * with 64 connections.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeLoadFiles } from "./saturation";
import type { ServerHandle } from "./server";
import { BENCH_SITE, buildBenchSite, optionalFeatures } from "./site";
import { buildBodies, issueKeys, setupSite, signArticles } from "./workload";
import { runWrk, type WrkResult } from "./wrk";

/** The pinned bench's keyed decide bodies: 20,000, signed content, 5 features each, 5,000 devices. */
export function benchBodies(): string[] {
  return buildBodies({
    count: 20_000,
    articles: signArticles(2_000, Date.now()),
    optional: optionalFeatures(buildBenchSite()),
    devices: 5_000,
    users: [],
    seed: 12,
  });
}

export async function keyedLoad(server: ServerHandle, label: string): Promise<(seconds: number) => Promise<WrkResult>> {
  const work = mkdtempSync(join(tmpdir(), `svc-${label}-`));
  await setupSite(server, work);
  const keys = await issueKeys(server, 300, label);
  const files = writeLoadFiles(work, keys, benchBodies());
  return (seconds) =>
    runWrk({
      url: server.url,
      threads: 1,
      connections: 64,
      durationS: seconds,
      ...files,
      site: BENCH_SITE,
      workDir: work,
      cpus: "1",
    });
}
