-- Edited by hand after drizzle-kit generate (it would add the column NOT NULL to a table that may hold rows).
-- The attribution rows' unique key is led by the block instead of the transaction hash: a backfill appends to
-- its right edge instead of writing a random leaf per row (~6 µs a row on 1M rows, more as the index outgrows
-- memory: bench/LOG.md), and the same index serves the rollback's delete above a block, so the block index
-- goes. A lookup by transaction hash starts at the suffix row (keyed by hash), which now names the block.
--
-- 1. Each suffix row's block, read from its rows through the hash-led key while it still exists.
ALTER TABLE "attribution_suffixes" ADD COLUMN "block_number" bigint;--> statement-breakpoint
UPDATE "attribution_suffixes" s SET "block_number" = a."block_number"
  FROM "attributions" a
  WHERE a."chain_id" = s."chain_id" AND a."tx_hash" = s."tx_hash" AND a."user_op_index" = s."user_op_index";--> statement-breakpoint
-- a suffix without rows is never read (the lookup joins them) and never written alone: none is expected
DELETE FROM "attribution_suffixes" WHERE "block_number" IS NULL;--> statement-breakpoint
ALTER TABLE "attribution_suffixes" ALTER COLUMN "block_number" SET NOT NULL;--> statement-breakpoint
-- 2. The key by block, then the two indexes it replaces.
CREATE UNIQUE INDEX "attributions_block_unique_idx" ON "attributions" USING btree ("chain_id","block_number","tx_hash","user_op_index","code");--> statement-breakpoint
DROP INDEX "attributions_unique_idx";--> statement-breakpoint
DROP INDEX "attributions_block_idx";
