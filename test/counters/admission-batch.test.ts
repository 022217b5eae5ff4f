import { describe, expect, it } from "bun:test";
import type { AdmissionBatcher } from "../../src/counters/admission-batch";
import { CountAdmissions } from "../../src/counters/count-admissions";
import type { SeenAdmission } from "../../src/counters/meter-values";
import { SeenAdmissions } from "../../src/counters/seen-admissions";
import { StoreUnavailable } from "../../src/infra/deadline";
import { until } from "../helpers/wait";

type Execute = () => Promise<unknown[]>;

/** Each kind of admission over a fake connection: how to call it, and the row that admits a subject first in its batch. */
const kinds = [
  {
    kind: "count",
    make: (execute: Execute, maxWaitMs?: number, now?: () => number) =>
      new CountAdmissions({ execute: execute as never }, maxWaitMs, now),
    admit: (b: AdmissionBatcher<unknown>, subject: string) => (b as CountAdmissions).admit(1, subject, 5),
    admitted: (subject: string, before: number) => ({ meter_id: 1, subject, before, after: before + 1 }),
  },
  {
    kind: "seen",
    make: (execute: Execute, maxWaitMs?: number, now?: () => number) =>
      new SeenAdmissions({ execute: execute as never }, maxWaitMs, now),
    admit: (b: AdmissionBatcher<unknown>, subject: string) => (b as SeenAdmissions).admit(1, subject, "item", 5),
    // A batch of one: its call is the first (ord 1).
    admitted: (_subject: string, before: number) => ({ ord: 1, before, member: false, added: 1 }),
  },
];

/**
 * The batching both admissions share (`AdmissionBatcher`): a statement out at a time, the calls
 * that come meanwhile in the next, and the read deadline, over a connection the test controls.
 */
describe.each(kinds)("$kind meters' batched admissions when the store fails or hangs", ({ make, admit, admitted }) => {
  it("fails every call of a failed statement, and the calls that came meanwhile go out together in the next", async () => {
    const sent: { fail(): void }[] = [];
    const failing = make(
      () =>
        new Promise((_, reject) => {
          sent.push({ fail: () => reject(new Error("store down")) });
        }),
    ) as AdmissionBatcher<unknown>;
    const first = Promise.allSettled([admit(failing, "z"), admit(failing, "z")]);
    expect(await until(() => sent.length === 1)).toBe(true);
    const meanwhile = Promise.allSettled([admit(failing, "z"), admit(failing, "y")]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent.length).toBe(1);
    sent[0]?.fail();
    expect((await first).map((a) => a.status)).toEqual(["rejected", "rejected"]);
    expect(await until(() => sent.length === 2)).toBe(true);
    sent[1]?.fail();
    expect((await meanwhile).map((a) => a.status)).toEqual(["rejected", "rejected"]);
    expect(sent.length).toBe(2);
    expect(failing.calls).toBe(4);
  });

  it("fails new calls at once behind a statement past the deadline, and never sends the calls that waited past it", async () => {
    const sent: ((rows: unknown[]) => void)[] = [];
    let now = 0;
    const hanging = make(
      () => new Promise((resolve) => sent.push(resolve)),
      1_000,
      () => now,
    ) as AdmissionBatcher<unknown>;
    const first = admit(hanging, "a");
    expect(await until(() => sent.length === 1)).toBe(true);
    // Queued behind it within the deadline; then the deadline passes with it still out.
    const queued = admit(hanging, "b");
    now += 999;
    const withinDeadline = admit(hanging, "c");
    now += 2;
    await expect(admit(hanging, "d")).rejects.toBeInstanceOf(StoreUnavailable);
    // It answers at last: "a" is admitted; "b" waited past the deadline and is failed unsent.
    sent[0]?.([admitted("a", 2)]);
    expect(((await first) as SeenAdmission).outcome).toBe("added");
    expect((await first).before).toBe(2);
    await expect(queued).rejects.toBeInstanceOf(StoreUnavailable);
    expect(await until(() => sent.length === 2)).toBe(true);
    sent[1]?.([admitted("c", 0)]);
    expect(await withinDeadline).toEqual({ outcome: "added", before: 0, keyId: 1 });
    expect(sent.length).toBe(2);
  });
});
