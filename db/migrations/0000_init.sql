CREATE TABLE "api_keys" (
	"id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"site_id" text NOT NULL,
	"name" text NOT NULL,
	"prefix" text NOT NULL,
	"hash" text NOT NULL,
	"permissions" text[] DEFAULT '{}'::text[] NOT NULL,
	"expires_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"request_count" bigint DEFAULT 0 NOT NULL,
	"last_used_on" date,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "change_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"topic" text NOT NULL,
	"tenant_id" text NOT NULL,
	"subject" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "grants" (
	"tenant_id" text NOT NULL,
	"user_id" uuid NOT NULL,
	"grant" text NOT NULL,
	"expires_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "grants_user_id_grant_pk" PRIMARY KEY("user_id","grant")
);
--> statement-breakpoint
CREATE TABLE "meter_counts" (
	"tenant_id" text NOT NULL,
	"site_id" text NOT NULL,
	"meter" text NOT NULL,
	"subject" text NOT NULL,
	"period" text NOT NULL,
	"count" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "meter_counts_tenant_id_site_id_meter_subject_period_pk" PRIMARY KEY("tenant_id","site_id","meter","subject","period")
);
--> statement-breakpoint
CREATE TABLE "meter_seen" (
	"tenant_id" text NOT NULL,
	"site_id" text NOT NULL,
	"meter" text NOT NULL,
	"subject" text NOT NULL,
	"period" text NOT NULL,
	"item" text NOT NULL,
	CONSTRAINT "meter_seen_tenant_id_site_id_meter_subject_period_item_pk" PRIMARY KEY("tenant_id","site_id","meter","subject","period","item")
);
--> statement-breakpoint
CREATE TABLE "site_documents" (
	"tenant_id" text NOT NULL,
	"site_id" text NOT NULL,
	"version" integer NOT NULL,
	"stage" text NOT NULL,
	"document" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "site_documents_tenant_id_site_id_version_pk" PRIMARY KEY("tenant_id","site_id","version")
);
--> statement-breakpoint
CREATE TABLE "sites" (
	"tenant_id" text NOT NULL,
	"id" text NOT NULL,
	"disabled" boolean DEFAULT false NOT NULL,
	"live_version" integer,
	"preview_version" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sites_tenant_id_id_pk" PRIMARY KEY("tenant_id","id")
);
--> statement-breakpoint
CREATE TABLE "tenant_hosts" (
	"host" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tenants" (
	"id" text PRIMARY KEY NOT NULL,
	"is_default" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"email" text NOT NULL,
	"email_verified" boolean DEFAULT false NOT NULL,
	"name" text,
	"first_name" text,
	"last_name" text,
	"image" text,
	"traits" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "grants" ADD CONSTRAINT "grants_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sites" ADD CONSTRAINT "sites_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tenant_hosts" ADD CONSTRAINT "tenant_hosts_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_hash_idx" ON "api_keys" USING btree ("hash");--> statement-breakpoint
CREATE INDEX "api_keys_site_idx" ON "api_keys" USING btree ("tenant_id","site_id");--> statement-breakpoint
CREATE UNIQUE INDEX "users_tenant_email_idx" ON "users" USING btree ("tenant_id","email");