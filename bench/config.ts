/** Bench modes and command-line options. */

export type Mode = "full" | "quick" | "smoke";

/** `all`: every scenario (the soak last); `soak`: the soak alone; `memory`: the memory scenario alone. */
export type Scenario = "all" | "soak" | "memory";

export interface BenchConfig {
  mode: Mode;
  scenario: Scenario;
  /** Soak scenario: simulated weeks and readers at any time (bench/soak.ts). */
  soakWeeks: number;
  soakReaders: number;
  /** Keys driven at the spec rate (2,000 per 10 s each). */
  specKeys: number;
  /** Aligned 10-second windows of the spec-rate run (smoke: one short unaligned segment instead). */
  specWindows: number;
  /** Aligned windows of the over-limit run (3,000 offered per window to one key). */
  overWindows: number;
  /** Keys the closed-loop saturation load rotates through. */
  saturationKeys: number;
  warmupS: number;
  /** Seconds of the open-loop floor run (the spec schedule against the bare Bun.serve). */
  floorS: number;
  /** Measured seconds per server (decide and the bare ceiling), in `ratioSegments` alternating segments. */
  saturationS: number;
  ratioSegments: number;
  wrkThreads: number;
  wrkConnections: number;
  /** Distinct meter subjects the memory scenario touches, and its time limit. */
  memorySubjects: number;
  memoryTimeLimitS: number;
  /** Longest wait, after the memory load, for the server to write its backlog and go quiet. */
  memorySettleLimitS: number;
  memoryKeys: number;
  /** Stored subjects the read-back scenario reads, on a server restarted over the memory scenario's data. */
  readBackSubjects: number;
  /** Time limit of the prime pass (one request per reader of the pools). */
  primeTimeLimitS: number;
  /** Pre-generated bodies: per spec key, and for wrk. */
  bodiesPerSpecKey: number;
  wrkBodies: number;
  articles: number;
  devices: number;
  users: number;
  /** Streaming scenario: seconds of 1,000-row batches, concurrent clients, distinct readers. */
  streamingS: number;
  streamingClients: number;
  streamingReaders: number;
  /** Cluster scenario (DATABASE_URL only): keys offered their limit, aligned windows (0: skipped). */
  clusterKeys: number;
  clusterWindows: number;
  /** Scaling scenario: readers held at its two measurements (null: skipped), requests per measurement. */
  scalingKnown: [number, number] | null;
  scalingMeasured: number;
  profile: boolean;
  databaseUrl: string | undefined;
}

const USAGE = `usage: bun run bench [--quick | --smoke] [--keys N] [--profile] [--scenario soak [--weeks N] [--readers N] | memory]

  (default)  full run: spec rate 6 windows, saturation 30 s, memory at 1,000,000 subjects,
             100,000 of them read back by a restarted server, soak 14 weeks x 1,000 readers
             (200 on a Postgres server)
  --quick    every scenario briefly (under two minutes): spec rate 1 window, memory at
             100,000 subjects, 5,000 read back, soak 14 weeks x 200 readers (50 on a server)
  --smoke    every scenario very briefly, checks only that the bench runs end to end (CI);
             soak 1 week x 20 readers
  --keys N   keys driven at the spec rate (default 25: 5,000 req/s in all)
  --profile  run the decide server under bun --cpu-prof and summarise the top self-time functions
  --scenario soak
             the soak alone (also: npm run bench:soak): stored size over simulated weeks, the
             clock injected, in this process (bench/soak.ts); --weeks (14) and --readers (1,000; 200 on a server)
             set its length and population, --smoke and --quick their smaller defaults
  --scenario memory
             the memory scenario alone: RSS of a fresh server after 1,000,000 meter subjects
             (--quick: 100,000), then the read back
  --pin      a run of its own (bench/pinned.ts): servers on CPU 0, generators on CPU 1; the bare
             Bun.serve ceiling, a minimal decide and svc over each transport in alternating
             segments, req/s and server CPU µs per request, p99 at 5,000 req/s fixed
             (--quick: short segments; --rounds N; --transports h1,bun,node; --compare DIR, repeatable:
             another checkout's svc in the same rounds, e.g. a worktree of an earlier commit)

The cluster scenario (one server process, then two) needs a Postgres server: it runs only with
DATABASE_URL, and not in smoke runs. Neither does the scaling scenario (CPU per request with 24
and 2,000 features defined, 10,000 and 1,000,000 readers known; 100,000 in quick runs).

DATABASE_URL set: the servers (and the soak) run on fresh databases created on that Postgres
server (dropped after).`;

/**
 * Soak weeks and readers per mode: three simulated months and the week after, when the third's
 * rows are swept (flatness is judged from week 6 on, so smoke runs only show that it runs). On a
 * Postgres server each new article a reader opens is a transaction: fewer readers there.
 */
const SOAK_SIZE: Record<Mode, { weeks: number; readers: number; serverReaders: number }> = {
  smoke: { weeks: 1, readers: 20, serverReaders: 20 },
  quick: { weeks: 14, readers: 200, serverReaders: 50 },
  full: { weeks: 14, readers: 1_000, serverReaders: 200 },
};

function positiveInt(name: string, value: string | undefined, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`--${name} needs an integer 1..${max}\n${USAGE}`);
  return n;
}

export function parseArgs(argv: readonly string[], env: Record<string, string | undefined>): BenchConfig {
  let mode: Mode = "full";
  let keys = 25;
  let profile = false;
  let scenario: Scenario = "all";
  let soakWeeks: number | undefined;
  let soakReaders: number | undefined;
  // npm passes everything after its own "--"; a literal "--" that reaches us is ignored too.
  const args = argv.filter((a) => a !== "--");
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === "--quick") mode = "quick";
    else if (a === "--smoke") mode = "smoke";
    else if (a === "--profile") profile = true;
    else if (a === "--keys" || a.startsWith("--keys=")) {
      const value = a.includes("=") ? a.slice(7) : args[++i];
      keys = Number(value);
      if (!Number.isInteger(keys) || keys < 1 || keys > 1000)
        throw new Error(`--keys needs an integer 1..1000\n${USAGE}`);
    } else if (a === "--scenario") {
      const name = args[++i];
      if (name !== "soak" && name !== "all" && name !== "memory")
        throw new Error(`--scenario is soak, memory or all\n${USAGE}`);
      scenario = name;
    } else if (a === "--weeks") soakWeeks = positiveInt("weeks", args[++i], 520);
    else if (a === "--readers") soakReaders = positiveInt("readers", args[++i], 1_000_000);
    else if (a === "--help" || a === "-h") {
      console.log(USAGE);
      process.exit(0);
    } else throw new Error(`unknown argument ${a}\n${USAGE}`);
  }
  const base = {
    mode,
    scenario,
    soakWeeks: soakWeeks ?? SOAK_SIZE[mode].weeks,
    soakReaders: soakReaders ?? (env.DATABASE_URL ? SOAK_SIZE[mode].serverReaders : SOAK_SIZE[mode].readers),
    specKeys: keys,
    profile,
    databaseUrl: env.DATABASE_URL || undefined,
    wrkThreads: 1,
    wrkConnections: 64,
  };
  if (mode === "smoke") {
    return {
      ...base,
      specWindows: 1,
      overWindows: 1,
      // Enough keys that 3 s of saturation on a fast machine stays inside the rate windows
      // (2,000 per key per 10 s): with 50, a fast phase answered half the load with 429.
      saturationKeys: 200,
      warmupS: 1,
      floorS: 1,
      saturationS: 2,
      ratioSegments: 1,
      memorySubjects: 2_000,
      memoryTimeLimitS: 10,
      memorySettleLimitS: 10,
      primeTimeLimitS: 10,
      memoryKeys: 10,
      readBackSubjects: 500,
      bodiesPerSpecKey: 400,
      wrkBodies: 5_000,
      articles: 500,
      devices: 500,
      users: 12,
      streamingS: 2,
      streamingClients: 2,
      streamingReaders: 1_000,
      clusterKeys: 0,
      clusterWindows: 0,
      scalingKnown: null,
      scalingMeasured: 0,
    };
  }
  if (mode === "quick") {
    return {
      ...base,
      specWindows: 1,
      overWindows: 3,
      saturationKeys: 500,
      warmupS: 2,
      floorS: 3,
      saturationS: 6,
      ratioSegments: 3,
      memorySubjects: 100_000,
      memoryTimeLimitS: 12,
      memorySettleLimitS: 10,
      primeTimeLimitS: 30,
      memoryKeys: 100,
      readBackSubjects: 5_000,
      bodiesPerSpecKey: 2_000,
      wrkBodies: 20_000,
      articles: 2_000,
      devices: 1_200,
      users: 40,
      streamingS: 5,
      streamingClients: 4,
      streamingReaders: 5_000,
      clusterKeys: 5,
      clusterWindows: 1,
      scalingKnown: [10_000, 100_000],
      scalingMeasured: 20_000,
    };
  }
  return {
    ...base,
    specWindows: 6,
    overWindows: 3,
    saturationKeys: 500,
    warmupS: 5,
    floorS: 20,
    saturationS: 30,
    ratioSegments: 6,
    memorySubjects: 1_000_000,
    memoryTimeLimitS: 5_400,
    memorySettleLimitS: 180,
    primeTimeLimitS: 300,
    memoryKeys: 200,
    readBackSubjects: 100_000,
    bodiesPerSpecKey: 4_000,
    wrkBodies: 50_000,
    articles: 5_000,
    devices: 20_000,
    users: 300,
    streamingS: 20,
    streamingClients: 4,
    streamingReaders: 20_000,
    clusterKeys: 10,
    clusterWindows: 3,
    scalingKnown: [10_000, 1_000_000],
    scalingMeasured: 100_000,
  };
}
