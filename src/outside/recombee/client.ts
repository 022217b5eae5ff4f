import type recombeeModule from "recombee-api-client";
import { type OutsideCalls, UNTRACED } from "../../infra/tracing";
import type { ServiceConfig } from "../service-config-model";

/** The client module, loaded on first use (a server with no engine configured never holds it). */
const recombee = (): typeof recombeeModule => require("recombee-api-client") as typeof recombeeModule;

/** One ask of the engine: for a user, or read-next for the item being read. */
export interface EngineAsk {
  readonly subject: string;
  readonly count: number;
  readonly scenario?: string;
  /** A ReQL filter (every user value already escaped), or undefined for none. */
  readonly filter?: string;
  /** The item being read: item-to-item for the subject. */
  readonly itemId?: string;
}

/** The engine's answer: its id for it and the item ids, best first. */
export interface EngineAnswer {
  readonly recommId: string;
  readonly itemIds: string[];
}

/** Why the engine gave no answer. */
export type EngineFailureKind =
  /** Timeout, refused connection, 5xx, 429: retry later (503 with Retry-After). */
  | "unavailable"
  /** The engine refused our credentials: retrying will not help (503 without Retry-After). */
  | "refused"
  /** The scenario is not one the engine knows (422). */
  | "unknown_scenario"
  /** The engine does not know the item (item-to-item) (an empty answer). */
  | "unknown_item"
  /** Any other refusal of the request (422). */
  | "invalid";

export class EngineFailure extends Error {
  constructor(
    readonly kind: EngineFailureKind,
    message: string,
  ) {
    super(message);
  }
}

/** The one interface recommendations go through. */
export interface RecommendationEngine {
  recommend(ask: EngineAsk): Promise<EngineAnswer>;
}

/**
 * Recombee's API through the maintained `recombee-api-client` (HMAC-signed URLs), one per
 * tenant's settings: `databaseId`, `token`, and `region` or `baseUri` (a fake in tests).
 * Ids are percent-encoded into the path (the client puts them there as given).
 */
export class RecombeeEngine implements RecommendationEngine {
  private readonly client: recombeeModule.ApiClient;

  constructor(
    config: ServiceConfig<"recombee">,
    private readonly timeoutMs: number,
    /** Recombee's client does its own HTTP (ky): traced as one client span per call, no header. */
    private readonly outside: OutsideCalls = UNTRACED,
  ) {
    const options: { region?: string; baseUri?: string; protocol?: string } = {};
    if (config.baseUri !== undefined) {
      const url = new URL(config.baseUri);
      options.baseUri = url.host + url.pathname.replace(/\/$/, "");
      options.protocol = url.protocol.replace(":", "");
    } else if (config.region !== undefined) {
      options.region = config.region;
    }
    this.client = new (recombee().ApiClient)(config.databaseId, config.token, options);
  }

  async recommend(ask: EngineAsk): Promise<EngineAnswer> {
    const optional = {
      scenario: ask.scenario,
      filter: ask.filter,
      cascadeCreate: true,
      returnProperties: false,
    };
    const request =
      ask.itemId === undefined
        ? new (recombee().requests.RecommendItemsToUser)(encodeURIComponent(ask.subject), ask.count, optional)
        : new (recombee().requests.RecommendItemsToItem)(encodeURIComponent(ask.itemId), ask.subject, ask.count, {
            ...optional,
            cascadeCreate: false,
          });
    (request as { timeout: number }).timeout = this.timeoutMs;
    let response: { recommId?: unknown; recomms?: unknown };
    try {
      response = (await this.outside.call(
        "recombee",
        ask.itemId === undefined ? "recommend items to user" : "recommend items to item",
        () => this.client.send(request),
      )) as typeof response;
    } catch (error) {
      throw failureOf(error);
    }
    const recomms = Array.isArray(response?.recomms) ? response.recomms : [];
    return {
      recommId: typeof response?.recommId === "string" ? response.recommId : "",
      itemIds: recomms
        .map((r) => (r && typeof r === "object" ? (r as { id?: unknown }).id : undefined))
        .filter((id): id is string => typeof id === "string"),
    };
  }
}

function failureOf(error: unknown): EngineFailure {
  if (error instanceof recombee().errors.TimeoutError) return new EngineFailure("unavailable", "engine timed out");
  if (error instanceof recombee().errors.ResponseError) {
    const status = (error as { statusCode: number }).statusCode;
    const text = String((error as { message?: unknown }).message ?? "").slice(0, 300);
    if (status === 401 || status === 403) return new EngineFailure("refused", `engine refused (${status})`);
    if (status === 404 && /scenario/i.test(text)) return new EngineFailure("unknown_scenario", text);
    if (status === 404) return new EngineFailure("unknown_item", text);
    if (status === 400 && /scenario/i.test(text)) return new EngineFailure("unknown_scenario", text);
    if (status === 400) return new EngineFailure("invalid", text);
    return new EngineFailure("unavailable", `engine answered ${status}`);
  }
  return new EngineFailure(
    "unavailable",
    `engine unreachable: ${String((error as Error)?.message ?? error).slice(0, 200)}`,
  );
}
