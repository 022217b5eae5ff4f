import type { Tracing } from "../infra/tracing";

/** What a transport needs of tracing: a server span around each request it hands on. */
export type ServerTracing = Pick<Tracing, "serve">;
