/**
 * What one statement costs the calling thread in each Postgres client Bun can run:
 * `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx bun bench/pg-driver-cost.ts
 * [statements] [at once] [rounds]` (20,000, 8, 3).
 *
 * On a Postgres server svc's request thread runs the driver (postgres.js, through drizzle), and
 * that thread's CPU per keyed decide is about 2.5 times what it is on the embedded store, whose
 * driver runs on a thread of its own (bench/store-thread-cost.ts, bench/HISTORY.md). This sends
 * the same statement, `select cardinality($1::text[])` with a 200-element array (the shape of a
 * counter flush's or an admission batch's parameters), `statements` times, `at once` in flight,
 * through postgres.js and through Bun's own client (`Bun.SQL`), each on a pool of 4 connections,
 * alternating in rounds, and prints the process' CPU (user and system) per statement and the
 * wall time. Both answer the same value (checked each round).
 *
 * For scale it first prints what one 1,100-byte socket write costs (to a sink in the same
 * process, both ends' CPU) on `node:net`, which postgres.js writes through, and on `Bun.connect`:
 * a profile of postgres.js charges much of its clock time to `writeBuffered`, Bun's native write.
 */

import net from "node:net";
import { SQL } from "bun";
import postgres from "postgres";

const url = process.env.DATABASE_URL;
if (!url) {
  console.error("set DATABASE_URL (a Postgres server, e.g. postgres://postgres@127.0.0.1:5432/postgres)");
  process.exit(2);
}
const statements = Number(process.argv[2] ?? 20_000);
const atOnce = Number(process.argv[3] ?? 8);
const rounds = Number(process.argv[4] ?? 3);
const TEXT = "select cardinality($1::text[]) as n";
const items = Array.from({ length: 200 }, (_, i) => `subject-${i}`);

type Run = (text: string, params: unknown[]) => Promise<readonly { n: number | string }[]>;

const pgjs = postgres(url, { max: 4, onnotice: () => {} });
const bunSql = new SQL(url, { max: 4 });
const drivers: [string, Run][] = [
  ["postgres.js", (text, params) => pgjs.unsafe(text, params as never[]) as unknown as Promise<{ n: number }[]>],
  ["Bun.SQL", (text, params) => bunSql.unsafe(text, params) as Promise<{ n: number }[]>],
];

async function measure(run: Run): Promise<string> {
  const answer = await run(TEXT, [items]);
  if (Number(answer[0]?.n) !== items.length) throw new Error(`wrong answer ${JSON.stringify(answer)}`);
  const each = async () => {
    for (let i = 0; i < statements / atOnce; i++) await run(TEXT, [items]);
  };
  const cpu = process.cpuUsage();
  const start = performance.now();
  await Promise.all(Array.from({ length: atOnce }, each));
  const used = process.cpuUsage(cpu);
  const ms = performance.now() - start;
  return `${(used.user / statements).toFixed(1)} µs user + ${(used.system / statements).toFixed(1)} µs system a statement, ${ms.toFixed(0)} ms`;
}

/** CPU µs a write of `bytes` costs, 40,000 writes, yielding to the loop every 8 as a driver does. */
async function writeCost(write: (chunk: Buffer) => void, bytes: number): Promise<string> {
  const chunk = Buffer.alloc(bytes, 65);
  const n = 40_000;
  const cpu = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    write(chunk);
    if (i % 8 === 7) await new Promise((r) => setImmediate(r));
  }
  const used = process.cpuUsage(cpu);
  return ((used.user + used.system) / n).toFixed(1);
}

const netSink = net.createServer((s) => s.on("data", () => {})).listen(0, "127.0.0.1");
await new Promise((r) => netSink.once("listening", r));
const netSocket = net.connect((netSink.address() as net.AddressInfo).port, "127.0.0.1");
await new Promise((r) => netSocket.once("connect", r));
const bunSink = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
const bunSocket = await Bun.connect({ hostname: "127.0.0.1", port: bunSink.port, socket: { data() {} } });
console.log(
  `one 1,100-byte write, both ends' CPU: node:net ${await writeCost((c) => netSocket.write(c), 1100)} µs, Bun.connect ${await writeCost((c) => bunSocket.write(c), 1100)} µs`,
);
netSocket.destroy();
netSink.close();
bunSocket.end();
bunSink.stop(true);

console.log(`${statements} statements, ${atOnce} at once, per round:`);
for (let r = 1; r <= rounds; r++) {
  // Every other round in the other order: a second run of a pair may measure slower.
  const order = r % 2 === 1 ? drivers : [...drivers].reverse();
  for (const [name, run] of order) console.log(`round ${r} ${name.padEnd(11)} ${await measure(run)}`);
}
await Promise.all([pgjs.end({ timeout: 1 }), bunSql.close()]);
