DROP INDEX "attributions_code_time_idx";--> statement-breakpoint
-- Hand-written: a code's page filtered by chain, kind or status (reverted is 1 row in 20) walks this index
-- alone — an index-only scan over the included columns — and reads the heap only for the rows it returns.
CREATE INDEX "attributions_code_page_idx" ON "attributions" USING btree ("code", "block_timestamp" DESC NULLS LAST, "id" DESC NULLS LAST)
  INCLUDE ("chain_id", "kind", "status");
