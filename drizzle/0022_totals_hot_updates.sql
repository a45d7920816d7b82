-- Hand-written (drizzle's table builder has no storage parameters). Every commit adds to the same totals rows
-- (a code's day, a window's senders…): one upsert per key and commit, thousands per dense batch. An update is
-- HOT (no index entry written, the old version pruned in its page) only when no indexed column changes and the
-- page has room for the new version. Before this, neither held: the series indexes INCLUDEd the counters, and
-- full pages sent each new version to another page, so every upsert wrote an entry in each of the table's
-- indexes (~15 µs an upsert; ~6 with both fixed, measured in bench/LOG.md).
--
-- 1. The series indexes keep their keys only: a code's series reads the counters from the heap.
DROP INDEX "code_daily_totals_series_idx";--> statement-breakpoint
CREATE INDEX "code_daily_totals_series_idx" ON "code_daily_totals" USING btree ("code", "day");--> statement-breakpoint
DROP INDEX "code_hourly_totals_series_idx";--> statement-breakpoint
CREATE INDEX "code_hourly_totals_series_idx" ON "code_hourly_totals" USING btree ("code", "hour");--> statement-breakpoint
-- 2. Room in each page for the next versions of its rows (applies to pages written from now on).
ALTER TABLE "code_daily_totals" SET (fillfactor = 70);--> statement-breakpoint
ALTER TABLE "code_hourly_totals" SET (fillfactor = 70);--> statement-breakpoint
ALTER TABLE "chain_daily_totals" SET (fillfactor = 70);--> statement-breakpoint
ALTER TABLE "chain_hourly_totals" SET (fillfactor = 70);--> statement-breakpoint
ALTER TABLE "code_daily_sender_counts" SET (fillfactor = 70);--> statement-breakpoint
ALTER TABLE "sender_window_counts" SET (fillfactor = 70);--> statement-breakpoint
ALTER TABLE "code_sender_window_counts" SET (fillfactor = 70);
