-- Hand-written (drizzle's index builder has no INCLUDE): a code's hourly and daily series read as index-only
-- scans, a few index pages instead of one heap page per row (the rows of a code are spread over the table
-- in commit order). Heap pages must be all-visible, which autovacuum keeps them once their hour has passed.
CREATE INDEX "code_hourly_totals_series_idx" ON "code_hourly_totals" USING btree ("code", "hour")
  INCLUDE ("registry", "chain_id", "kind", "success_count", "reverted_count");--> statement-breakpoint
CREATE INDEX "code_daily_totals_series_idx" ON "code_daily_totals" USING btree ("code", "day")
  INCLUDE ("registry", "chain_id", "kind", "success_count", "reverted_count", "suffix_gas");
