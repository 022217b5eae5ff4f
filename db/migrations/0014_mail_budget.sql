CREATE TABLE "mail_budget" (
	"tenant_id" text NOT NULL,
	"budget" text NOT NULL,
	"subject" text NOT NULL,
	"window_start" bigint NOT NULL,
	"spent" integer NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "mail_budget_tenant_id_budget_subject_window_start_pk" PRIMARY KEY("tenant_id","budget","subject","window_start")
);
--> statement-breakpoint
CREATE INDEX "mail_budget_expires_idx" ON "mail_budget" USING btree ("expires_at");