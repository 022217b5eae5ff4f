/**
 * Where keyed decide's server CPU goes: `npx bun bench/profile-keyed.ts [seconds]`.
 *
 * Starts svc under `bun --cpu-prof` on CPU 0 (embedded store, the transport in SVC_HTTP_SERVER,
 * h1 by default), deploys the bench site, issues 300 keys, warms it with wrk for 5 s on CPU 1,
 * loads it for `seconds` (12), stops it and prints the self time per function over that window
 * (bench/profile.ts), as the pinned bench's svc rows are loaded (64 connections, 5 features a
 * request, signed content, a count meter).
 */
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keyedLoad } from "./keyed-load";
import { cleanupAll } from "./proc";
import { summariseProfile } from "./profile";
import { startDecideServer } from "./server";

const seconds = Number(process.argv[2] ?? 12);
const profileDir = mkdtempSync(join(tmpdir(), "svc-profile-out-"));
const server = await startDecideServer({
  label: "profile",
  cpus: "0",
  profileDir,
  env: { SVC_HTTP_SERVER: process.env.SVC_HTTP_SERVER ?? "h1" },
});
try {
  const load = await keyedLoad(server, "profile");
  await load(5);
  const measured = await load(seconds);
  console.log(`${measured.rps} req/s over ${seconds} s`);
} finally {
  await server.stop();
}
const file = join(profileDir, readdirSync(profileDir)[0] as string);
// The window: the last `seconds` (and a second) of the profile, the measured load.
const summary = summariseProfile(file, Number(process.env.PROFILE_TOP ?? 30), -(seconds + 1));
console.log(`${summary.total_ms} ms sampled in the window; self time per function, highest first:`);
for (const e of summary.top) {
  console.log(`${String(e.self_pct).padStart(5)}%  ${e.function} (${e.location})  from ${e.called_from}`);
}
// PROFILE_INCLUSIVE=1: the project's functions by inclusive time too.
if (process.env.PROFILE_INCLUSIVE) {
  console.log("inclusive time per project function, highest first:");
  for (const e of summary.inclusive.slice(0, 40))
    console.log(`${String(e.total_pct).padStart(5)}%  ${e.function} (${e.location})`);
}
await cleanupAll();
