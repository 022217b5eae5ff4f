ALTER TABLE "audit_log" ADD COLUMN "words" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "site_documents" ADD COLUMN "source" text;