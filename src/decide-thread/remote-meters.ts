import type { MeterName, MeterStore } from "../counters/meter-store";
import { type Channel, remoteOf } from "./channel";

/** A meter's name as data: the counters pass their table itself, which no message can carry. */
function plain(name: MeterName): MeterName {
  return { tenant: name.tenant, site: name.site, meter: name.meter, period: name.period, keyId: name.keyId ?? null };
}

/** The main thread's meter store as this thread's (src/decide-thread/thread.ts). */
export function remoteMeterStore(channel: Channel): MeterStore {
  const store = remoteOf<MeterStore>(channel, "meters");
  return {
    storedKeys: () => store.storedKeys(),
    load: (keys) => store.load(keys),
    keyId: (name) => store.keyId(plain(name)),
    write: (parts) => store.write(parts.map((part) => ({ ...part, name: plain(part.name) }))),
    admitSeen: (name, subject, item, allowance) => store.admitSeen(plain(name), subject, item, allowance),
    admitCount: (name, subject, allowance) => store.admitCount(plain(name), subject, allowance),
  };
}
