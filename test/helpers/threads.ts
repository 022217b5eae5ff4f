import { readdirSync, readFileSync } from "node:fs";

export interface ThreadPolicy {
  tid: number;
  name: string;
  /** Linux scheduling policy: 0 normal, 5 SCHED_IDLE. */
  policy: number;
}

/** The threads of a Linux process with their names and scheduling policies (from /proc). */
export function threadPolicies(pid: number): ThreadPolicy[] {
  const out: ThreadPolicy[] = [];
  for (const entry of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${entry}/comm`, "utf8").trim();
      const stat = readFileSync(`/proc/${pid}/task/${entry}/stat`, "utf8");
      // Fields after the name (which may hold spaces) start at field 3; the policy is field 41.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.push({ tid: Number(entry), name, policy: Number(fields[41 - 3]) });
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}
