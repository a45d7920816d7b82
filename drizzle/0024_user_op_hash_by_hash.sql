-- A hash index for the lookup by UserOperation hash: only equality is asked of it, and its entries (a 4-byte hash
-- code and a row pointer) stay in memory where a B-tree's random leaves of 66-character keys did not: 1.2 µs an
-- attribution row less on the commit bench's 1.15M rows (bench/LOG.md, eighth session).
DROP INDEX "attributions_user_op_hash_idx";--> statement-breakpoint
CREATE INDEX "attributions_user_op_hash_idx" ON "attributions" USING hash ("user_op_hash") WHERE "attributions"."user_op_hash" is not null;