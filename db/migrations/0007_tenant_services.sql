CREATE TABLE "tenant_services" (
	"tenant_id" text NOT NULL,
	"service" text NOT NULL,
	"config" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tenant_services_tenant_id_service_pk" PRIMARY KEY("tenant_id","service")
);
--> statement-breakpoint
ALTER TABLE "tenant_services" ADD CONSTRAINT "tenant_services_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;