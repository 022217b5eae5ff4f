import type { CompiledSite } from "../core/compile";
import type { BatchResult, CompiledFeature, Exposure, FeatureDecision, FeatureResult } from "../core/types";
import type { DecisionEngine, DecisionSampler } from "../decide/engine";
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

/** An effectless evaluation's result as data: its features by name (the thread's compiled ones stay there). */
interface WireBatch {
  readonly answered: readonly string[];
  readonly results: readonly FeatureResult[];
  readonly unanswered: string[];
  readonly ticks: readonly string[];
  readonly exposures: readonly Exposure[];
}

/**
 * The thread's result with this thread's compiled features for its names: the same document, a
 * site's deploy reaching both threads by the same change. A feature this thread does not hold yet
 * (a deploy in flight) is a retry, as the thread answers for a document it does not hold yet.
 */
function batchOf(wire: WireBatch, document: CompiledSite): BatchResult {
  const answered: CompiledFeature[] = [];
  const decisions: Record<string, FeatureDecision> = {};
  for (let i = 0; i < wire.answered.length; i++) {
    const name = wire.answered[i] as string;
    const feature = document.features.get(name);
    if (feature === undefined) {
      throw new StoreUnavailable("site", "The site's document is still being loaded; retry shortly.");
    }
    answered.push(feature);
    decisions[name] = (wire.results[i] as FeatureResult).decision;
  }
  return { ...wire, answered, decisions };
}

/**
 * The main thread's decision engine with the thread (src/decide-thread/thread.ts): decisions that
 * count (browser decide), the forward route's effectless evaluation and the console's try and
 * explain are made by the thread, with the meters keyed decide counts, so a reader decided through
 * several routes is counted once and each route reads the same counts. An evaluation with an
 * observer (OFREP's and impact capture's, which read the snapshot here) stays on `local`: in thread
 * mode OFREP's flags and browser decide's samples are the thread's own (`threadFlags`,
 * `serveEngine`).
 */
export function threadEngine(channel: Channel, local: DecisionEngine): DecisionEngine {
  return {
    evaluate: (req, effects) =>
      effects === false
        ? channel.call<WireBatch>("engine", "evaluate", [wireOf(req)]).then((wire) => batchOf(wire, req.document))
        : local.evaluate(req, effects),
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

/**
 * The thread's side: each call made by its own engine, the site and document its registry holds.
 * A browser decision is offered to the thread's `sampler` (impact replay's capture, with its meters).
 */
export function serveEngine(
  channel: Channel,
  engine: DecisionEngine,
  registry: SiteRegistry,
  sampler: DecisionSampler,
): void {
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
    evaluate: async (wire: WireRequest): Promise<WireBatch> => {
      const { answered, results, unanswered, ticks, exposures } = await engine.evaluate(requestOf(wire), false);
      return { answered: answered.map((feature) => feature.name), results, unanswered, ticks, exposures };
    },
    decideJson: async (wire: WireRequest) => {
      const req = requestOf(wire);
      const answer = await engine.decideJson(req);
      sampler.offer(engine, req, answer);
      return answer;
    },
    tryJson: (wire: WireRequest) => engine.tryJson(requestOf(wire)),
    explainJson: (wire: WireRequest) => engine.explainJson(requestOf(wire)),
  });
}
