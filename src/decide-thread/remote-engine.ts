import type { CompiledSite } from "../core/compile";
import type { DecisionEngine } from "../decide/engine";
import type { DecideRequest } from "../decide/request";
import { StoreUnavailable } from "../infra/deadline";
import { evaluateFlags, type FlagEvaluator, InvalidContext } from "../ofrep/service";
import type { SiteRegistry } from "../sites/registry";
import type { Channel } from "./channel";

/** A decision request as data: its site by ids, its document by which one (the thread compiles its own). */
export interface WireRequest {
  readonly tenantId: string;
  readonly siteId: string;
  readonly preview: boolean;
  readonly input: DecideRequest["input"];
  readonly userId: string | null;
  readonly grants?: DecideRequest["grants"];
  readonly accessMissing?: boolean;
  readonly org?: DecideRequest["org"];
  readonly now: number;
}

function wireOf(req: DecideRequest): WireRequest {
  return {
    tenantId: req.site.tenantId,
    siteId: req.site.id,
    preview: req.preview,
    input: req.input,
    userId: req.userId,
    grants: req.grants,
    accessMissing: req.accessMissing,
    org: req.org,
    now: req.now,
  };
}

/**
 * The main thread's decision engine with the thread (src/decide-thread/thread.ts): decisions that
 * count (browser decide) and the console's try and explain are made by the thread, with the meters
 * keyed decide counts, so a reader decided through both routes is counted once. What needs the
 * evaluation's snapshot on this side (OFREP's observer, impact replay's capture, the forward
 * route's effectless evaluation) stays on `local`.
 */
export function threadEngine(channel: Channel, local: DecisionEngine): DecisionEngine {
  return {
    evaluate: local.evaluate,
    chooseDocument: local.chooseDocument,
    decideJson: (req) => channel.call<string>("engine", "decideJson", [wireOf(req)]),
    tryJson: (req) => channel.call<string>("engine", "tryJson", [wireOf(req)]),
    explainJson: (req) => channel.call<string>("engine", "explainJson", [wireOf(req)]),
  };
}

/**
 * OFREP's flags evaluated by the thread's engine (its meters, ticks applied there); a context the
 * thread refuses comes back as the `InvalidContext` the routes answer 400 for.
 */
export function threadFlags(channel: Channel): FlagEvaluator {
  return (site, _document, preview, names, context, now) => {
    const wire = { tenantId: site.tenantId, siteId: site.id, preview, input: { features: [] }, userId: null, now };
    return channel
      .call<Awaited<ReturnType<FlagEvaluator>>>("engine", "flags", [wire, names, context])
      .catch((error: unknown) => {
        if (error instanceof Error && error.name === "InvalidContext") throw new InvalidContext(error.message);
        throw error;
      });
  };
}

/** The thread's side: each call made by its own engine, the site and document its registry holds. */
export function serveEngine(channel: Channel, engine: DecisionEngine, registry: SiteRegistry): void {
  const requestOf = (wire: WireRequest): DecideRequest => {
    const site = registry.site(wire.tenantId, wire.siteId);
    const document = wire.preview ? site?.preview : site?.live;
    // A site or staged document the main thread holds and this one not yet (a change in flight).
    if (site === undefined || document === null || document === undefined) {
      throw new StoreUnavailable("site", "The site's document is still being loaded; retry shortly.");
    }
    const { tenantId: _t, siteId: _s, ...rest } = wire;
    return { ...rest, site, document: document as CompiledSite };
  };
  channel.serve("engine", {
    flags: (wire: WireRequest, names: string[], context: unknown) => {
      const { site, document, preview, now } = requestOf(wire);
      return evaluateFlags(engine, site, document, preview, names, context, now);
    },
    decideJson: (wire: WireRequest) => engine.decideJson(requestOf(wire)),
    tryJson: (wire: WireRequest) => engine.tryJson(requestOf(wire)),
    explainJson: (wire: WireRequest) => engine.explainJson(requestOf(wire)),
  });
}
