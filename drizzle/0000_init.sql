CREATE TABLE "builder_codes" (
	"code" text PRIMARY KEY NOT NULL,
	"wallet_address" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "builder_codes_wallet_address_unique" UNIQUE("wallet_address")
);
--> statement-breakpoint
CREATE TABLE "attributions" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "attributions_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"chain_id" integer NOT NULL,
	"block_number" bigint NOT NULL,
	"block_hash" text NOT NULL,
	"block_timestamp" timestamp with time zone NOT NULL,
	"tx_hash" text NOT NULL,
	"tx_index" integer NOT NULL,
	"kind" text NOT NULL,
	"user_op_index" integer NOT NULL,
	"user_op_hash" text,
	"sender" text NOT NULL,
	"target" text,
	"code" text NOT NULL,
	"code_status" text NOT NULL,
	"code_wallet" text,
	"codes" text[] NOT NULL,
	"schema_id" smallint NOT NULL,
	"registry_chain_id" bigint,
	"registry_address" text,
	"suffix" text NOT NULL,
	"suffix_bytes" integer NOT NULL,
	"suffix_gas" integer NOT NULL,
	"status" text NOT NULL,
	"actual_gas_cost" text
);
--> statement-breakpoint
CREATE TABLE "blocks" (
	"chain_id" integer NOT NULL,
	"number" bigint NOT NULL,
	"hash" text NOT NULL,
	"parent_hash" text NOT NULL,
	"timestamp" timestamp with time zone NOT NULL,
	"tx_count" integer NOT NULL,
	CONSTRAINT "blocks_chain_id_number_pk" PRIMARY KEY("chain_id","number")
);
--> statement-breakpoint
CREATE TABLE "chain_state" (
	"chain_id" integer PRIMARY KEY NOT NULL,
	"head_block" bigint NOT NULL,
	"head_hash" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "code_daily_totals" (
	"code" text NOT NULL,
	"chain_id" integer NOT NULL,
	"kind" text NOT NULL,
	"success_count" bigint DEFAULT 0 NOT NULL,
	"reverted_count" bigint DEFAULT 0 NOT NULL,
	"suffix_gas" bigint DEFAULT 0 NOT NULL,
	"day" date NOT NULL,
	CONSTRAINT "code_daily_totals_code_chain_id_day_kind_pk" PRIMARY KEY("code","chain_id","day","kind")
);
--> statement-breakpoint
CREATE TABLE "code_hourly_totals" (
	"code" text NOT NULL,
	"chain_id" integer NOT NULL,
	"kind" text NOT NULL,
	"success_count" bigint DEFAULT 0 NOT NULL,
	"reverted_count" bigint DEFAULT 0 NOT NULL,
	"suffix_gas" bigint DEFAULT 0 NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	CONSTRAINT "code_hourly_totals_code_chain_id_hour_kind_pk" PRIMARY KEY("code","chain_id","hour","kind")
);
--> statement-breakpoint
CREATE TABLE "malformed_suffixes" (
	"chain_id" integer NOT NULL,
	"block_number" bigint NOT NULL,
	"tx_hash" text NOT NULL,
	"user_op_index" integer NOT NULL,
	"reason" text NOT NULL,
	CONSTRAINT "malformed_suffixes_chain_id_tx_hash_user_op_index_pk" PRIMARY KEY("chain_id","tx_hash","user_op_index")
);
--> statement-breakpoint
CREATE TABLE "ranges" (
	"chain_id" integer NOT NULL,
	"from_block" bigint NOT NULL,
	"to_block" bigint NOT NULL,
	"parent_hash" text NOT NULL,
	"to_hash" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"tx_count" integer,
	"attribution_count" integer,
	"mismatch_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"done_at" timestamp with time zone,
	CONSTRAINT "ranges_chain_id_from_block_pk" PRIMARY KEY("chain_id","from_block")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "attributions_unique_idx" ON "attributions" USING btree ("chain_id","tx_hash","user_op_index","code");--> statement-breakpoint
CREATE INDEX "attributions_block_idx" ON "attributions" USING btree ("chain_id","block_number");--> statement-breakpoint
CREATE INDEX "attributions_tx_hash_idx" ON "attributions" USING btree ("tx_hash");--> statement-breakpoint
CREATE INDEX "attributions_user_op_hash_idx" ON "attributions" USING btree ("user_op_hash") WHERE "attributions"."user_op_hash" is not null;--> statement-breakpoint
CREATE INDEX "code_daily_totals_day_idx" ON "code_daily_totals" USING btree ("day");--> statement-breakpoint
CREATE INDEX "code_hourly_totals_hour_idx" ON "code_hourly_totals" USING btree ("hour");--> statement-breakpoint
CREATE INDEX "malformed_suffixes_block_idx" ON "malformed_suffixes" USING btree ("chain_id","block_number");--> statement-breakpoint
CREATE INDEX "ranges_pending_idx" ON "ranges" USING btree ("chain_id","from_block") WHERE "ranges"."status" = 'pending';