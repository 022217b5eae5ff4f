/**
 * Why `answerJson` concatenates: `npx bun bench/string-building.ts` times building a decide
 * answer's JSON (five decisions, one with this request's meter values, one exposure) by
 * concatenation, as src/decide/answer-json.ts does, against pushing its parts to an array and
 * joining them once, each then encoded as UTF-8 into a buffer as the h1 transport encodes an
 * answer. Joining makes fewer objects (decide-census: 18 fewer strings a request) but took longer
 * (docs/performance.md), so the concatenation stays. Three rounds of 500,000 each; µs per answer.
 */
const keys = ['"paywall":', '"recirculation":', '"slot_technology":', '"slot_food":', '"app_banner":'] as const;
const shared = ['{"outcome":"off"}', '{"outcome":"on","fields":{"slot":"a"}}', '{"outcome":"off"}', '{"outcome":"on"}'];
const head = '{"outcome":"on","type":"paywall"';
const exposure = '{"schema":"iglu:x/1-0-0","data":{"experiment":"e","variant":"v","preview":false}}';
const meters = (n: number) => `,"meters":{"articles":{"allowance":5,"count":${n % 7}}}}`;
const decision = (i: number, n: number): string => (i === 0 ? head + meters(n) : (shared[i - 1] as string));

function concatenated(n: number): string {
  let out = '{"decisions":{';
  for (let i = 0; i < keys.length; i++) {
    if (i > 0) out += ",";
    out += keys[i] + decision(i, n);
  }
  out += '},"unanswered":[],"preview":false,"exposures":[';
  out += exposure;
  return `${out}]}`;
}

function joined(n: number): string {
  const out: string[] = ['{"decisions":{'];
  for (let i = 0; i < keys.length; i++) {
    if (i > 0) out.push(",");
    out.push(keys[i] as string, decision(i, n));
  }
  out.push('},"unanswered":', "[]", ',"preview":false,"exposures":[', exposure, "]}");
  return out.join("");
}

const buffer = Buffer.allocUnsafe(65_536);
let sink = 0;
for (let round = 0; round < 3; round++) {
  for (const [name, build] of [
    ["concatenated", concatenated],
    ["joined", joined],
  ] as const) {
    for (let i = 0; i < 50_000; i++) sink += buffer.write(build(i), 1024, "utf8");
    const start = performance.now();
    for (let i = 0; i < 500_000; i++) sink += buffer.write(build(i), 1024, "utf8");
    console.log(`${name.padEnd(12)} ${(((performance.now() - start) * 1000) / 500_000).toFixed(3)} µs`);
  }
}
if (sink === 0) console.log("");
