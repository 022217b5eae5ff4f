CREATE TABLE "audit_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"actor" text NOT NULL,
	"tenant_id" text,
	"site_id" text,
	"action" text NOT NULL,
	"target" text NOT NULL,
	"summary" text NOT NULL
);
--> statement-breakpoint
CREATE INDEX "audit_log_tenant_site_id" ON "audit_log" USING btree ("tenant_id","site_id","id");