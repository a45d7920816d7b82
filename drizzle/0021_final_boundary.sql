CREATE TABLE "chain_finality" (
	"chain_id" integer PRIMARY KEY NOT NULL,
	"final_through" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "chain_state" ADD COLUMN "refused_rollback_to" bigint;--> statement-breakpoint
ALTER TABLE "chain_state" ADD COLUMN "refused_since" timestamp with time zone;