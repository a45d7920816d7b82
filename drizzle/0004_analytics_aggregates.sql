CREATE TABLE "attribution_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "attribution_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"type" text NOT NULL,
	"chain_id" integer NOT NULL,
	"code" text NOT NULL,
	"registry" text NOT NULL,
	"from_block" bigint NOT NULL,
	"to_block" bigint,
	"attributions" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "chain_daily_senders" (
	"chain_id" integer NOT NULL,
	"day" date NOT NULL,
	"sender" text NOT NULL,
	"attributions" bigint NOT NULL,
	CONSTRAINT "chain_daily_senders_day_chain_id_sender_pk" PRIMARY KEY("day","chain_id","sender")
);
--> statement-breakpoint
CREATE TABLE "chain_daily_totals" (
	"chain_id" integer NOT NULL,
	"kind" text NOT NULL,
	"attributions" bigint DEFAULT 0 NOT NULL,
	"success_count" bigint DEFAULT 0 NOT NULL,
	"reverted_count" bigint DEFAULT 0 NOT NULL,
	"day" date NOT NULL,
	CONSTRAINT "chain_daily_totals_chain_id_day_kind_pk" PRIMARY KEY("chain_id","day","kind")
);
--> statement-breakpoint
CREATE TABLE "chain_hourly_totals" (
	"chain_id" integer NOT NULL,
	"kind" text NOT NULL,
	"attributions" bigint DEFAULT 0 NOT NULL,
	"success_count" bigint DEFAULT 0 NOT NULL,
	"reverted_count" bigint DEFAULT 0 NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	CONSTRAINT "chain_hourly_totals_chain_id_hour_kind_pk" PRIMARY KEY("chain_id","hour","kind")
);
--> statement-breakpoint
CREATE TABLE "code_daily_senders" (
	"code" text NOT NULL,
	"registry" text NOT NULL,
	"chain_id" integer NOT NULL,
	"day" date NOT NULL,
	"sender" text NOT NULL,
	"attributions" bigint NOT NULL,
	CONSTRAINT "code_daily_senders_code_registry_chain_id_day_sender_pk" PRIMARY KEY("code","registry","chain_id","day","sender")
);
--> statement-breakpoint
ALTER TABLE "code_daily_totals" DROP CONSTRAINT "code_daily_totals_code_chain_id_day_kind_pk";--> statement-breakpoint
ALTER TABLE "code_hourly_totals" DROP CONSTRAINT "code_hourly_totals_code_chain_id_hour_kind_pk";--> statement-breakpoint
ALTER TABLE "code_daily_totals" ADD COLUMN "registry" text DEFAULT 'canonical' NOT NULL;--> statement-breakpoint
ALTER TABLE "code_hourly_totals" ADD COLUMN "registry" text DEFAULT 'canonical' NOT NULL;--> statement-breakpoint
ALTER TABLE "code_daily_totals" ADD CONSTRAINT "code_daily_totals_code_registry_chain_id_day_kind_pk" PRIMARY KEY("code","registry","chain_id","day","kind");--> statement-breakpoint
ALTER TABLE "code_hourly_totals" ADD CONSTRAINT "code_hourly_totals_code_registry_chain_id_hour_kind_pk" PRIMARY KEY("code","registry","chain_id","hour","kind");--> statement-breakpoint
CREATE INDEX "attribution_events_code_idx" ON "attribution_events" USING btree ("code","id");--> statement-breakpoint
CREATE INDEX "attributions_code_time_idx" ON "attributions" USING btree ("code","block_timestamp" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "ranges_done_at_idx" ON "ranges" USING btree ("chain_id","done_at") WHERE "ranges"."done_at" is not null;--> statement-breakpoint
CREATE INDEX "ranges_last_error_at_idx" ON "ranges" USING btree ("chain_id","last_error_at") WHERE "ranges"."last_error_at" is not null;--> statement-breakpoint
-- Backfill (hand-written): rebuild every aggregate from the attribution rows already stored, so the
-- registry namespaces, chain totals and unique senders hold from the first start after the upgrade.
CREATE TEMPORARY TABLE "attribution_buckets" AS
SELECT code, chain_id, kind, status, suffix_gas, sender, tx_hash, user_op_index,
  CASE WHEN registry_address IS NULL THEN 'canonical' ELSE registry_chain_id::text || ':' || lower(registry_address) END AS registry,
  (block_timestamp AT TIME ZONE 'UTC')::date AS day,
  date_trunc('hour', block_timestamp, 'UTC') AS hour
FROM attributions;--> statement-breakpoint
DELETE FROM "code_daily_totals";--> statement-breakpoint
DELETE FROM "code_hourly_totals";--> statement-breakpoint
INSERT INTO "code_daily_totals" (code, registry, chain_id, day, kind, success_count, reverted_count, suffix_gas)
SELECT code, registry, chain_id, day, kind, count(*) FILTER (WHERE status = 'success'), count(*) FILTER (WHERE status = 'reverted'), sum(suffix_gas)
FROM attribution_buckets GROUP BY 1, 2, 3, 4, 5;--> statement-breakpoint
INSERT INTO "code_hourly_totals" (code, registry, chain_id, hour, kind, success_count, reverted_count, suffix_gas)
SELECT code, registry, chain_id, hour, kind, count(*) FILTER (WHERE status = 'success'), count(*) FILTER (WHERE status = 'reverted'), sum(suffix_gas)
FROM attribution_buckets GROUP BY 1, 2, 3, 4, 5;--> statement-breakpoint
INSERT INTO "chain_daily_totals" (chain_id, day, kind, attributions, success_count, reverted_count)
SELECT chain_id, day, kind, count(*),
  count(DISTINCT tx_hash || ':' || user_op_index) FILTER (WHERE status = 'success'),
  count(DISTINCT tx_hash || ':' || user_op_index) FILTER (WHERE status = 'reverted')
FROM attribution_buckets GROUP BY 1, 2, 3;--> statement-breakpoint
INSERT INTO "chain_hourly_totals" (chain_id, hour, kind, attributions, success_count, reverted_count)
SELECT chain_id, hour, kind, count(*),
  count(DISTINCT tx_hash || ':' || user_op_index) FILTER (WHERE status = 'success'),
  count(DISTINCT tx_hash || ':' || user_op_index) FILTER (WHERE status = 'reverted')
FROM attribution_buckets GROUP BY 1, 2, 3;--> statement-breakpoint
INSERT INTO "code_daily_senders" (code, registry, chain_id, day, sender, attributions)
SELECT code, registry, chain_id, day, sender, count(*) FROM attribution_buckets GROUP BY 1, 2, 3, 4, 5;--> statement-breakpoint
INSERT INTO "chain_daily_senders" (chain_id, day, sender, attributions)
SELECT chain_id, day, sender, count(*) FROM attribution_buckets GROUP BY 1, 2, 3;--> statement-breakpoint
DROP TABLE "attribution_buckets";
