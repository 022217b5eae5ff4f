import type { Commands } from "../context";

interface Stats {
  databaseBytes: number;
  tables: { table: string; rows: number | null; bytes: number }[];
  readAt: string;
}

/** `svc db stats`: the store's size per table (docs/operations.md, "Store size"). */
export const dbCommands: Commands = {
  "db stats": async ({ call }) => {
    const out = (await call("GET", "/admin/db/stats")) as Stats;
    const lines = [...out.tables]
      .sort((a, b) => b.bytes - a.bytes)
      .map((t) => `${t.table}\t${t.rows === null ? "-" : Math.round(t.rows)}\t${megabytes(t.bytes)}`);
    return {
      json: out,
      text: [
        `database\t${megabytes(out.databaseBytes)} MB (read ${out.readAt})`,
        "TABLE\tROWS (ESTIMATE)\tMB",
        ...lines,
      ].join("\n"),
    };
  },
};

function megabytes(bytes: number): string {
  return (bytes / 1_048_576).toFixed(2);
}
