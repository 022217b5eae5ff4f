CREATE TABLE "checkout_events" (
	"tenant_id" text NOT NULL,
	"event_id" text NOT NULL,
	"type" text NOT NULL,
	"subject" text,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "checkout_events_tenant_id_event_id_pk" PRIMARY KEY("tenant_id","event_id")
);
--> statement-breakpoint
CREATE TABLE "checkout_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"site_id" text NOT NULL,
	"offer" text NOT NULL,
	"grant" text NOT NULL,
	"mode" text NOT NULL,
	"duration_ms" bigint,
	"user_id" uuid,
	"status" text DEFAULT 'open' NOT NULL,
	"granted_user_id" uuid,
	"subscription_id" text,
	"payment_intent_id" text,
	"customer_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX "checkout_events_subject_idx" ON "checkout_events" USING btree ("tenant_id","subject");--> statement-breakpoint
CREATE INDEX "checkout_sessions_subscription_idx" ON "checkout_sessions" USING btree ("tenant_id","subscription_id");--> statement-breakpoint
CREATE INDEX "checkout_sessions_payment_intent_idx" ON "checkout_sessions" USING btree ("tenant_id","payment_intent_id");--> statement-breakpoint
CREATE INDEX "checkout_sessions_customer_idx" ON "checkout_sessions" USING btree ("tenant_id","customer_id");