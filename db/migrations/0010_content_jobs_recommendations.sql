CREATE TABLE "content_authors" (
	"tenant_id" text NOT NULL,
	"site_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text,
	"cms_version" bigint NOT NULL,
	CONSTRAINT "content_authors_tenant_id_site_id_id_pk" PRIMARY KEY("tenant_id","site_id","id")
);
--> statement-breakpoint
CREATE TABLE "content_items" (
	"tenant_id" text NOT NULL,
	"site_id" text NOT NULL,
	"id" text NOT NULL,
	"type" text DEFAULT 'story' NOT NULL,
	"headline" text,
	"description" text,
	"image" text,
	"url" text,
	"published_at" timestamp with time zone,
	"sections" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"tags" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"authors" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"content_type" text,
	"language" text,
	"deleted" boolean DEFAULT false NOT NULL,
	"cms_version" bigint NOT NULL,
	"read_at" timestamp with time zone NOT NULL,
	CONSTRAINT "content_items_tenant_id_site_id_id_pk" PRIMARY KEY("tenant_id","site_id","id")
);
--> statement-breakpoint
CREATE TABLE "jobs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"key" text NOT NULL,
	"payload" jsonb,
	"state" text DEFAULT 'queued' NOT NULL,
	"run_at" timestamp with time zone NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"dirty" boolean DEFAULT false NOT NULL,
	"lease" text,
	"lease_until" timestamp with time zone,
	"last_error" text,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "recommendation_usage" (
	"tenant_id" text NOT NULL,
	"period" text NOT NULL,
	"calls" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "recommendation_usage_tenant_id_period_pk" PRIMARY KEY("tenant_id","period")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "jobs_kind_key_idx" ON "jobs" USING btree ("kind","key");--> statement-breakpoint
CREATE INDEX "jobs_due_idx" ON "jobs" USING btree ("state","run_at");