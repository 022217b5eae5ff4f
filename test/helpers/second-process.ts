import { openDatabase } from "../../db/client";
import type { freshDatabase } from "./databases";
import { type Harness, startHarness } from "./harness";

/**
 * A second process' worth of state over the same store as `first`, its clock following the
 * first's: on a server it has its own connections (LISTEN/NOTIFY, its own pool, so writes race
 * inside Postgres); on the embedded store it shares the in-process database and sees changes by
 * polling the change log. `close` releases its own connections (after `harness.stop()`).
 */
export async function startSecondProcess(
  db: Awaited<ReturnType<typeof freshDatabase>>,
  first: Harness,
): Promise<{ harness: Harness; close(): Promise<void> }> {
  let close = async () => {};
  let harness: Harness;
  if (db.url) {
    const second = await openDatabase({ url: db.url });
    close = () => second.close();
    harness = await startHarness(second);
  } else {
    harness = await startHarness(db);
  }
  harness.clock.set(first.clock.now());
  return { harness, close };
}

export { within } from "./wait";
