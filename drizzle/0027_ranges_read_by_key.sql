-- The follower asks for the first flagged range at every head; without an index that read every range of the chain,
-- one per block at the tip and ~800k after a Base-sized backfill (134 ms at 400k ranges, bench/LOG.md).
CREATE INDEX "ranges_mismatch_idx" ON "ranges" USING btree ("chain_id","from_block") WHERE "ranges"."mismatch_at" is not null;