CREATE TABLE "streaming_values" (
	"tenant_id" text NOT NULL,
	"site_id" text NOT NULL,
	"user_id" uuid NOT NULL,
	"pipeline" text NOT NULL,
	"window_end" bigint NOT NULL,
	"values" jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "streaming_values_tenant_id_site_id_user_id_pipeline_pk" PRIMARY KEY("tenant_id","site_id","user_id","pipeline")
);
