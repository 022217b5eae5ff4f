/**
 * The bench site document: a realistic news site with 24 decision features (a request names
 * five), two content keys, a seen meter and a count meter, two experiments and catalog items
 * that outcomes reference. Deployed through the CLI like any operator's document.
 */

export const BENCH_SITE = "bench";

export const CONTENT_KEYS = [
  { id: "bench-2026", secret: "bench-content-key-2026-change-me" },
  { id: "bench-2027", secret: "bench-content-key-2027-next-rotation" },
] as const;

export const SECTIONS = [
  "politics",
  "world",
  "business",
  "sport",
  "culture",
  "science",
  "technology",
  "travel",
  "food",
  "opinion",
] as const;

/** Features every article page asks for: the paywall (seen meter) and recirculation (count meter). */
export const ALWAYS_FEATURES = ["paywall", "recirculation"] as const;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Doc = { [key: string]: Json };

const ref = (catalog: string, select: string[]): Json => ({ $ref: { catalog, select } });

function sectionSlot(section: string): Doc {
  return {
    description: `Promotion slot on ${section} pages.`,
    purpose: "decision",
    outcomes: {
      house_ad: {
        type: "data",
        fields: { creative: ref(`creative_${section}`, ["id", "headline", "image"]), placement: "sidebar" },
      },
      creative_a: { type: "data", fields: { creative: ref("creative_a", ["id", "headline"]) } },
      creative_b: { type: "data", fields: { creative: ref("creative_b", ["id", "headline"]) } },
      creative_c: { type: "data", fields: { creative: ref("creative_c", ["id", "headline"]) } },
      none: {},
    },
    rules: [
      { when: { fact: "grants.premium", exists: true }, then: "none" },
      {
        when: {
          any: [
            { fact: "context.layout", eq: "amp" },
            { fact: "context.bot", eq: true },
          ],
        },
        then: "none",
      },
      {
        when: {
          all: [
            { fact: "content.section", eq: section },
            { fact: "context.scrollDepth", gte: 0.25 },
          ],
        },
        split: {
          experiment: "slot_creative",
          outcomes: { a: "creative_a", b: "creative_b", c: "creative_c" },
        },
      },
      { when: { fact: "content.section", eq: section }, then: "house_ad" },
    ],
    default: "none",
    onError: "none",
  };
}

function features(): Doc {
  const out: Doc = {
    paywall: {
      description: "Subscribers read; free articles read; five a month metered; then the offer experiment.",
      purpose: "decision",
      outcomes: {
        subscriber: { type: "allow" },
        free_article: { type: "allow" },
        metered: { type: "allow", fields: { banner: "You are reading a free article." } },
        wall_monthly: {
          type: "deny",
          fields: {
            headline: "Keep reading for less than a coffee a week",
            offer: ref("offer_monthly", ["id", "title", "price", "currency", "trialDays"]),
          },
        },
        wall_annual: {
          type: "deny",
          fields: {
            headline: "A year of journalism, one price",
            offer: ref("offer_annual", ["id", "title", "price", "currency", "badge"]),
          },
        },
        wall_generic: { type: "deny", fields: { headline: "Subscribe to keep reading", subscribeUrl: "/subscribe" } },
      },
      rules: [
        { when: { fact: "grants.premium", exists: true }, then: "subscriber" },
        { when: { fact: "content.access", eq: "free" }, then: "free_article" },
        { when: { meter: "articles", allows: true }, then: "metered", tick: ["articles"] },
        {
          split: { experiment: "paywall_offer", outcomes: { monthly: "wall_monthly", annual: "wall_annual" } },
        },
      ],
      default: "wall_generic",
      onError: "wall_generic",
    },
    recirculation: {
      description: "Recommendation widget while the daily budget lasts.",
      purpose: "decision",
      outcomes: {
        recommend: { type: "data", fields: { scenario: "article-bottom", count: 6 } },
        none: {},
      },
      rules: [
        {
          when: {
            all: [
              { meter: "api_views", remaining: { gt: 0 } },
              { not: { fact: "context.bot", eq: true } },
              { fact: "context.layout", ne: "amp" },
            ],
          },
          then: "recommend",
          tick: ["api_views"],
        },
      ],
      default: "none",
      onError: "none",
    },
    newsletter_prompt: {
      purpose: "decision",
      outcomes: {
        prompt: {
          type: "data",
          fields: { list: ref("list_daily", ["slug", "label"]), placement: "inline", afterParagraph: 4 },
        },
        hidden: {},
      },
      rules: [
        {
          when: {
            any: [
              { fact: "context.utm_medium", in: ["email", "newsletter"] },
              { fact: "context.dismissedPrompt", eq: true },
            ],
          },
          then: "hidden",
        },
        {
          when: {
            atLeast: 2,
            of: [
              { fact: "context.scrollDepth", gte: 0.5 },
              { fact: "context.section", notIn: ["obituaries", "corrections"] },
              { fact: "context.visitsThisWeek", gt: 2 },
            ],
          },
          then: "prompt",
        },
      ],
      default: "hidden",
      onError: "hidden",
    },
    article_badges: {
      purpose: "decision",
      outcomes: {
        breaking: { type: "badge", fields: { label: "Breaking", style: "red" } },
        archive: { type: "badge", fields: { label: "From the archive" } },
        long_read: { type: "badge", fields: { label: "Long read" } },
        none: {},
      },
      rules: [
        {
          when: {
            all: [
              { fact: "content.tags", contains: "breaking" },
              { fact: "content.publishedAt", withinLast: "12h" },
            ],
          },
          then: "breaking",
        },
        { when: { fact: "content.publishedAt", before: "2020-01-01T00:00:00Z" }, then: "archive" },
        {
          when: {
            all: [
              { fact: "content.wordCount", gte: 2500 },
              { fact: "content.wordCount", lte: 20000 },
            ],
          },
          then: "long_read",
        },
      ],
      default: "none",
      onError: "none",
    },
    comments: {
      purpose: "decision",
      outcomes: { open: { type: "allow" }, read_only: { type: "data", fields: { mode: "read" } }, closed: {} },
      rules: [
        { when: { fact: "content.tags", contains: "legal" }, then: "closed" },
        { when: { fact: "grants.premium", exists: true }, then: "open" },
        { when: { fact: "content.section", in: ["opinion", "culture", "sport"] }, then: "read_only" },
      ],
      default: "closed",
      onError: "closed",
    },
    app_banner: {
      purpose: "decision",
      outcomes: {
        ios: { type: "data", fields: { store: "https://apps.apple.com/app/news", style: "smart-banner" } },
        android: { type: "data", fields: { store: "https://play.google.com/store/apps/news" } },
        none: {},
      },
      rules: [
        { when: { fact: "context.inApp", eq: true }, then: "none" },
        { when: { fact: "context.platform", eq: "ios" }, then: "ios" },
        { when: { fact: "context.platform", eq: "android" }, then: "android" },
      ],
      default: "none",
      onError: "none",
    },
    consent_banner: {
      purpose: "decision",
      outcomes: { gdpr: { type: "data", fields: { framework: "tcf-2.2" } }, ccpa: { type: "data" }, none: {} },
      rules: [
        { when: { fact: "context.country", in: ["GB", "IE", "FR", "DE", "ES", "IT", "NL", "SE"] }, then: "gdpr" },
        { when: { fact: "context.region", eq: "US-CA" }, then: "ccpa" },
      ],
      default: "none",
      onError: "none",
    },
    student_offer: {
      purpose: "decision",
      outcomes: {
        offer: { type: "data", fields: { offer: ref("offer_student", ["id", "title", "price", "currency"]) } },
        none: {},
      },
      rules: [
        { when: { fact: "grants.premium", exists: true }, then: "none" },
        {
          when: {
            all: [
              { fact: "context.referrer", contains: ".ac.uk" },
              { meter: "articles", remaining: { lte: 2 } },
            ],
          },
          then: "offer",
        },
      ],
      default: "none",
      onError: "none",
    },
    live_blog_refresh: {
      purpose: "decision",
      outcomes: { fast: { type: "data", fields: { seconds: 15 } }, slow: { type: "data", fields: { seconds: 60 } } },
      rules: [
        {
          when: {
            all: [
              { fact: "content.liveBlog", eq: true },
              { fact: "content.publishedAt", withinLast: "6h" },
            ],
          },
          then: "fast",
        },
      ],
      default: "slow",
      onError: "slow",
    },
    podcast_promo: {
      purpose: "decision",
      outcomes: {
        show: { type: "data", fields: { podcast: ref("podcast_daily", ["id", "title", "feed"]) } },
        none: {},
      },
      rules: [
        {
          when: {
            atLeast: 2,
            of: [
              { fact: "content.section", in: ["politics", "world", "business"] },
              { fact: "context.visitsThisWeek", gte: 3 },
              { fact: "context.platform", in: ["ios", "android"] },
            ],
          },
          then: "show",
        },
      ],
      default: "none",
      onError: "none",
    },
    print_upsell: {
      purpose: "decision",
      outcomes: {
        upsell: { type: "data", fields: { offer: ref("offer_print", ["id", "title", "price"]) } },
        none: {},
      },
      rules: [
        {
          when: {
            all: [
              { fact: "grants.premium", exists: true },
              { fact: "context.country", eq: "GB" },
              { not: { fact: "grants.print", exists: true } },
            ],
          },
          then: "upsell",
        },
      ],
      default: "none",
      onError: "none",
    },
    related_topics: {
      purpose: "decision",
      outcomes: { tags: { type: "data", fields: { max: 5 } }, none: {} },
      rules: [{ when: { fact: "content.tags", exists: true }, then: "tags" }],
      default: "none",
      onError: "none",
    },
    reading_time: {
      purpose: "decision",
      outcomes: { show: { type: "data" }, hide: {} },
      rules: [{ when: { fact: "content.wordCount", gte: 600 }, then: "show" }],
      default: "hide",
      onError: "hide",
    },
    survey_invite: {
      purpose: "decision",
      outcomes: { invite: { type: "data", fields: { survey: "reader-2026" } }, none: {} },
      rules: [
        {
          when: {
            all: [
              { fact: "context.visitsThisWeek", gt: 5 },
              { meter: "api_views", remaining: { lt: 90 } },
            ],
          },
          then: "invite",
        },
      ],
      default: "none",
      onError: "none",
    },
  };
  for (const section of SECTIONS) out[`slot_${section}`] = sectionSlot(section);
  return out;
}

function catalog(): Doc {
  const out: Doc = {
    offer_monthly: {
      id: "digital-monthly",
      title: "Digital, monthly",
      price: 9.99,
      currency: "GBP",
      trialDays: 14,
      internalSku: "DIG-M-01",
    },
    offer_annual: {
      id: "digital-annual",
      title: "Digital, annual",
      price: 99,
      currency: "GBP",
      badge: "Best value",
      internalSku: "DIG-A-01",
    },
    offer_student: { id: "student", title: "Student, annual", price: 29, currency: "GBP", internalSku: "STU-01" },
    offer_print: { id: "print-weekend", title: "Weekend print + digital", price: 15, internalSku: "PRT-W-01" },
    list_daily: { slug: "daily_briefing", label: "The Daily Briefing", sendHour: 7 },
    podcast_daily: { id: "today", title: "Today in Focus", feed: "https://podcasts.example/today.xml" },
    creative_a: { id: "cr-a", headline: "Support independent journalism" },
    creative_b: { id: "cr-b", headline: "Journalism that lasts" },
    creative_c: { id: "cr-c", headline: "Read without limits" },
  };
  for (const section of SECTIONS) {
    out[`creative_${section}`] = {
      id: `house-${section}`,
      headline: `More ${section} from our newsroom`,
      image: `https://img.example/${section}.jpg`,
    };
  }
  return out;
}

/** The bench site document (valid against docs/site-document.md). */
export function buildBenchSite(): Doc {
  const doc: Doc = {
    schemaVersion: 1,
    description: "Load bench site: 24 decision features, signed content, seen and count meters, experiments.",
    identity: { mode: "svc_only" },
    allowedOrigins: ["https://news.bench.example"],
    contentKeys: CONTENT_KEYS.map((k) => ({ id: k.id, secret: k.secret })),
    meters: {
      articles: { kind: "seen", allowance: 5, period: "month", timeZone: "Europe/London" },
      api_views: { kind: "count", allowance: 100, period: "day", timeZone: "UTC" },
    },
    catalog: catalog(),
    experiments: {
      paywall_offer: { salt: "bench-paywall-offer", variants: { monthly: 50, annual: 50 } },
      slot_creative: { salt: "bench-slot-creative", variants: { a: 40, b: 30, c: 30 } },
    },
    features: features(),
    // Written by the streaming scenario; no feature reads it, so decide's work is unchanged.
    pipelines: {
      [STREAMING_PIPELINE]: {
        source: "organization",
        columns: { score: "number", visits: "integer", churn_risk: "boolean", segment: "string" },
      },
    },
  };
  return doc;
}

/** The pipeline the streaming scenario posts to. */
export const STREAMING_PIPELINE = "engagement";

/** Decision features a request may name besides the always-asked ones. */
export function optionalFeatures(doc: Doc): string[] {
  const all = Object.keys(doc.features as Doc);
  return all.filter((f) => !(ALWAYS_FEATURES as readonly string[]).includes(f));
}
