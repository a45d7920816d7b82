CREATE TABLE "attribution_suffixes" (
	"chain_id" integer NOT NULL,
	"tx_hash" text NOT NULL,
	"user_op_index" integer NOT NULL,
	"codes" text[] NOT NULL,
	"suffix" text NOT NULL,
	"suffix_bytes" integer NOT NULL,
	CONSTRAINT "attribution_suffixes_chain_id_tx_hash_user_op_index_pk" PRIMARY KEY("chain_id","tx_hash","user_op_index")
);
--> statement-breakpoint
-- each transaction's (or UserOperation's) suffix once, from any of its rows: they all carry the same one
INSERT INTO "attribution_suffixes" ("chain_id", "tx_hash", "user_op_index", "codes", "suffix", "suffix_bytes")
SELECT DISTINCT ON ("chain_id", "tx_hash", "user_op_index") "chain_id", "tx_hash", "user_op_index", "codes", "suffix", "suffix_bytes"
FROM "attributions"
ORDER BY "chain_id", "tx_hash", "user_op_index";--> statement-breakpoint
ALTER TABLE "attributions" DROP COLUMN "codes";--> statement-breakpoint
ALTER TABLE "attributions" DROP COLUMN "suffix";--> statement-breakpoint
ALTER TABLE "attributions" DROP COLUMN "suffix_bytes";