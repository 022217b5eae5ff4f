CREATE TABLE "content_keys" (
	"tenant_id" text NOT NULL,
	"site_id" text NOT NULL,
	"key_id" text NOT NULL,
	"secret" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"rotated_at" timestamp with time zone,
	CONSTRAINT "content_keys_tenant_id_site_id_key_id_pk" PRIMARY KEY("tenant_id","site_id","key_id")
);

--> statement-breakpoint
-- Each key's secret moves out of the stored documents: the live version's wins, then the staged
-- one's, then the newest version's. It stays clear here until the server seals it at start
-- (SiteStore.sealContentKeys): SQL has no SVC_SECRET.
INSERT INTO "content_keys" ("tenant_id", "site_id", "key_id", "secret")
SELECT DISTINCT ON (d."tenant_id", d."site_id", k->>'id') d."tenant_id", d."site_id", k->>'id', k->>'secret'
FROM "site_documents" d
JOIN "sites" s ON s."tenant_id" = d."tenant_id" AND s."id" = d."site_id"
CROSS JOIN LATERAL jsonb_array_elements(
  CASE WHEN jsonb_typeof(d."document"->'contentKeys') = 'array' THEN d."document"->'contentKeys' ELSE '[]'::jsonb END
) AS k
WHERE jsonb_typeof(k) = 'object' AND jsonb_typeof(k->'id') = 'string' AND jsonb_typeof(k->'secret') = 'string'
ORDER BY d."tenant_id", d."site_id", k->>'id',
  coalesce(d."version" = s."live_version", false) DESC,
  coalesce(d."version" = s."preview_version", false) DESC,
  d."version" DESC;
--> statement-breakpoint
-- The author's text of such a version (0016) holds the secrets too: it is dropped, and the
-- version shows as its data (indented), as versions stored before 0016 do.
UPDATE "site_documents" SET "source" = NULL
WHERE "source" IS NOT NULL AND jsonb_typeof("document"->'contentKeys') = 'array' AND EXISTS (
  SELECT 1 FROM jsonb_array_elements("document"->'contentKeys') AS k
  WHERE jsonb_typeof(k) = 'object' AND k->'secret' IS NOT NULL
);
--> statement-breakpoint
UPDATE "site_documents" SET "document" = jsonb_set(
  "document",
  '{contentKeys}',
  (SELECT coalesce(jsonb_agg(CASE WHEN jsonb_typeof(e.k) = 'object' THEN e.k - 'secret' ELSE e.k END ORDER BY e.i), '[]'::jsonb)
   FROM jsonb_array_elements("document"->'contentKeys') WITH ORDINALITY AS e(k, i))
)
WHERE jsonb_typeof("document"->'contentKeys') = 'array';
