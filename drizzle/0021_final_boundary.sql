ALTER TABLE "chain_state" ADD COLUMN "final_through" bigint;--> statement-breakpoint
ALTER TABLE "chain_state" ADD COLUMN "refused_rollback_to" bigint;--> statement-breakpoint
ALTER TABLE "chain_state" ADD COLUMN "refused_since" timestamp with time zone;