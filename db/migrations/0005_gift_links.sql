CREATE TABLE "gift_allowances" (
	"tenant_id" text NOT NULL,
	"site_id" text NOT NULL,
	"gifter_id" uuid NOT NULL,
	"period" text NOT NULL,
	"count" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "gift_allowances_tenant_id_site_id_gifter_id_period_pk" PRIMARY KEY("tenant_id","site_id","gifter_id","period")
);
--> statement-breakpoint
CREATE TABLE "gift_links" (
	"id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"site_id" text NOT NULL,
	"gifter_id" uuid NOT NULL,
	"content_id" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "gift_links_site_gifter_idx" ON "gift_links" USING btree ("tenant_id","site_id","gifter_id");--> statement-breakpoint
CREATE INDEX "gift_links_revoked_idx" ON "gift_links" USING btree ("expires_at") WHERE revoked_at is not null;