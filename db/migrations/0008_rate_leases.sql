CREATE TABLE "rate_leases" (
	"key_id" text NOT NULL,
	"window_start" bigint NOT NULL,
	"used" integer NOT NULL,
	"last_grant" integer NOT NULL,
	CONSTRAINT "rate_leases_key_id_window_start_pk" PRIMARY KEY("key_id","window_start")
);
