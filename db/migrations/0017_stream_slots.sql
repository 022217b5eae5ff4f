CREATE TABLE "stream_slots" (
	"key_id" text NOT NULL,
	"holder" text NOT NULL,
	"opened" integer NOT NULL,
	"seen_at" timestamp with time zone NOT NULL,
	CONSTRAINT "stream_slots_key_id_holder_pk" PRIMARY KEY("key_id","holder")
);
