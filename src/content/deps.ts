import type { Db } from "../../db/client";
import type { Config } from "../config";
import { type ContentDeps, registerContentJobs } from "./service";
import { DrizzleContentStore } from "./store";

/** Builds the content deps (src/deps.ts) and registers the CMS re-read job on the queue. */
export function createContentDeps(
  input: Pick<ContentDeps, "services" | "jobs" | "now" | "outside"> & {
    readonly db: Db;
    readonly config: Pick<Config, "cmsTimeoutMs" | "contentDebounceMs">;
  },
): ContentDeps {
  const deps: ContentDeps = {
    services: input.services,
    store: new DrizzleContentStore(input.db),
    jobs: input.jobs,
    now: input.now,
    cmsTimeoutMs: input.config.cmsTimeoutMs,
    outside: input.outside,
  };
  registerContentJobs(deps, input.config.contentDebounceMs);
  return deps;
}
