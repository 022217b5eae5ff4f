CREATE TABLE "newsletter_confirmations" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"site_id" text NOT NULL,
	"user_id" uuid NOT NULL,
	"list_id" uuid NOT NULL,
	"email" text NOT NULL,
	"mail_id" bigint,
	"requested_from" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"confirmed_at" timestamp with time zone,
	"confirmed_from" text
);
--> statement-breakpoint
CREATE TABLE "newsletter_lists" (
	"tenant_id" text NOT NULL,
	"site_id" text NOT NULL,
	"slug" text NOT NULL,
	"id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "newsletter_lists_tenant_id_site_id_slug_pk" PRIMARY KEY("tenant_id","site_id","slug")
);
--> statement-breakpoint
CREATE TABLE "newsletter_standings" (
	"tenant_id" text NOT NULL,
	"user_id" uuid NOT NULL,
	"list_id" uuid NOT NULL,
	"site_id" text NOT NULL,
	"status" text NOT NULL,
	"pending_until" timestamp with time zone,
	"consent" jsonb,
	"vendor_status" text,
	"vendor_subscriber_id" text,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "newsletter_standings_tenant_id_user_id_list_id_pk" PRIMARY KEY("tenant_id","user_id","list_id")
);
--> statement-breakpoint
ALTER TABLE "mail_outbox" ADD COLUMN "headers" text;--> statement-breakpoint
ALTER TABLE "newsletter_confirmations" ADD CONSTRAINT "newsletter_confirmations_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "newsletter_standings" ADD CONSTRAINT "newsletter_standings_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "newsletter_confirmations_email_idx" ON "newsletter_confirmations" USING btree ("tenant_id","email","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "newsletter_lists_id_idx" ON "newsletter_lists" USING btree ("id");