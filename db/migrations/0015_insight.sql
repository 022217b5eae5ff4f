CREATE TABLE "decision_counts" (
	"tenant_id" text NOT NULL,
	"site_id" text NOT NULL,
	"grain" text NOT NULL,
	"bucket" timestamp with time zone NOT NULL,
	"feature" text NOT NULL,
	"outcome" text NOT NULL,
	"experiment" text NOT NULL,
	"variant" text NOT NULL,
	"verdict" text NOT NULL,
	"offer" text NOT NULL,
	"count" bigint NOT NULL,
	CONSTRAINT "decision_counts_tenant_id_site_id_grain_bucket_feature_outcome_experiment_variant_pk" PRIMARY KEY("tenant_id","site_id","grain","bucket","feature","outcome","experiment","variant")
);
--> statement-breakpoint
CREATE INDEX "decision_counts_grain_bucket_idx" ON "decision_counts" USING btree ("grain","bucket");