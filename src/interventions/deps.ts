import type { Database, Db } from "../../db/client";
import type { Config } from "../config";
import type { SiteRegistry } from "../sites/registry";
import { InterventionHub } from "./hub";
import { DrizzleStreamSlots } from "./stream-slots";

/** Builds the interventions stream's hub (src/deps.ts): slots in the store only on a server. */
export function createInterventionHub(input: {
  readonly db: Db;
  readonly kind: Database["kind"];
  readonly config: Pick<Config, "sseHeartbeatMs" | "sseStreamsPerKey">;
  readonly registry: SiteRegistry;
  readonly now: () => number;
}): InterventionHub {
  const heartbeatMs = input.config.sseHeartbeatMs;
  return new InterventionHub(input.registry, {
    heartbeatMs,
    streamsPerKey: input.config.sseStreamsPerKey,
    resumeMs: 5 * 60_000,
    resumeEvents: 1000,
    now: input.now,
    // Renewed at every heartbeat: a process gone for three no longer holds its slots.
    slots: input.kind === "server" ? new DrizzleStreamSlots(input.db, 3 * heartbeatMs) : null,
  });
}
