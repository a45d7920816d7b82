-- The suffix rows keyed by block, as the attribution rows are (0023): a backfill appends to the key's right edge
-- instead of writing a random leaf of a hash-led key per transaction (3.5 µs an attribution row less at 1.15M rows,
-- bench/LOG.md), and the rollback's delete above a block reads it. The lookup by a transaction's hash goes through
-- a hash index of its own suffix rows (user_op_index -1): equality only, small entries that stay in memory.
ALTER TABLE "attribution_suffixes" DROP CONSTRAINT "attribution_suffixes_chain_id_tx_hash_user_op_index_pk";--> statement-breakpoint
ALTER TABLE "attribution_suffixes" ADD CONSTRAINT "attribution_suffixes_block_pk" PRIMARY KEY("chain_id","block_number","tx_hash","user_op_index");--> statement-breakpoint
CREATE INDEX "attribution_suffixes_tx_hash_idx" ON "attribution_suffixes" USING hash ("tx_hash") WHERE "attribution_suffixes"."user_op_index" = -1;