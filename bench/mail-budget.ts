/**
 * What taking the mail budget costs (docs/performance.md, "Mail budget"): per take, 1,000
 * sequential takes for distinct mailboxes (three counter upserts each, in one transaction), and
 * 200 concurrent takes for one mailbox (every take waits on the same counter rows).
 * `bun bench/mail-budget.ts` (embedded); with DATABASE_URL also on that server, in a scratch database.
 */
import { openDatabase } from "../db/client";
import { createScratchDatabase } from "../db/scratch-database";
import { chargesOf, MAIL_BUDGETS, type MailBudgetRules } from "../src/mail-budget/budgets";
import { DrizzleMailBudgetStore } from "../src/mail-budget/store";

const ROOMY: MailBudgetRules = Object.fromEntries(
  Object.entries(MAIL_BUDGETS).map(([kind, rules]) => [kind, rules.map((r) => ({ ...r, limit: 1_000_000 }))]),
) as unknown as MailBudgetRules;

async function measure(label: string, url: string | undefined) {
  const scratch = url ? await createScratchDatabase(url, `svc_bench_mb_${Date.now()}`) : null;
  const database = await openDatabase(scratch ? { url: scratch.url } : { dataDir: ":memory:" });
  const store = new DrizzleMailBudgetStore(database.db);
  const now = Date.now();
  const take = (mailbox: string, client: string) =>
    database.db.transaction((tx) =>
      store.take(
        tx,
        "t",
        chargesOf(
          "sign_in",
          [
            ["mailbox", mailbox, 1],
            ["client", client, 1],
            ["site", "news", 1],
          ],
          ROOMY,
        ),
        now,
      ),
    );
  let start = performance.now();
  for (let i = 0; i < 1_000; i++) await take(`m${i}@example.com`, `10.0.${i >> 8}.${i & 255}`);
  const sequential = (performance.now() - start) / 1_000;
  start = performance.now();
  await Promise.all(Array.from({ length: 200 }, (_, i) => take("hot@example.com", `10.1.0.${i}`)));
  const hot = (performance.now() - start) / 200;
  console.log(
    `${label}: ${sequential.toFixed(2)} ms a take in sequence; ${hot.toFixed(2)} ms a take, 200 racing for one mailbox`,
  );
  await database.close();
  await scratch?.drop();
}

await measure("embedded", undefined);
if (process.env.DATABASE_URL) await measure("server", process.env.DATABASE_URL);
