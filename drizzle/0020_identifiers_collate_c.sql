-- Hand-written. Every text column that holds an identifier (a hash, an address, a code, a registry, a window's
-- name, an enum's value) compares byte by byte: COLLATE "C". Until now they took the database's collation, and
-- every index entry, unique check, sort and join of the commit compared them through the locale's rules: on a
-- database created as en_US.UTF-8 (the default of many installs and hosted services) PostgreSQL spent 2.2 times
-- the CPU per attribution row on the commit bench, and a third more on the dense backfill (BENCHMARKS.md, "The
-- database's locale"). The values are ASCII (but for codes that are not clean text, which now sort by code point
-- like the rest), so the order is the one C.UTF-8 gave, and a keyset cursor (a code after another) means the same
-- on every database.
--
-- Human text keeps the database's collation: a range's last error, a malformed suffix's reason, a notification's
-- title, message and target path, a project's name.
--
-- Each table's columns change in one statement: the table is not rewritten (the type stays text), its indexes on
-- those columns are rebuilt, under the table's lock, once.
ALTER TABLE "chain_state"
	ALTER COLUMN "head_hash" TYPE text COLLATE "C",
	ALTER COLUMN "genesis_hash" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "ranges"
	ALTER COLUMN "parent_hash" TYPE text COLLATE "C",
	ALTER COLUMN "to_hash" TYPE text COLLATE "C",
	ALTER COLUMN "status" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "blocks"
	ALTER COLUMN "hash" TYPE text COLLATE "C",
	ALTER COLUMN "parent_hash" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "attributions"
	ALTER COLUMN "block_hash" TYPE text COLLATE "C",
	ALTER COLUMN "tx_hash" TYPE text COLLATE "C",
	ALTER COLUMN "kind" TYPE text COLLATE "C",
	ALTER COLUMN "user_op_hash" TYPE text COLLATE "C",
	ALTER COLUMN "sender" TYPE text COLLATE "C",
	ALTER COLUMN "target" TYPE text COLLATE "C",
	ALTER COLUMN "code" TYPE text COLLATE "C",
	ALTER COLUMN "code_status" TYPE text COLLATE "C",
	ALTER COLUMN "code_wallet" TYPE text COLLATE "C",
	ALTER COLUMN "registry_address" TYPE text COLLATE "C",
	ALTER COLUMN "status" TYPE text COLLATE "C",
	ALTER COLUMN "actual_gas_cost" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "attribution_suffixes"
	ALTER COLUMN "tx_hash" TYPE text COLLATE "C",
	ALTER COLUMN "codes" TYPE text[] COLLATE "C",
	ALTER COLUMN "suffix" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "malformed_suffixes"
	ALTER COLUMN "tx_hash" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "code_daily_totals"
	ALTER COLUMN "code" TYPE text COLLATE "C",
	ALTER COLUMN "registry" TYPE text COLLATE "C",
	ALTER COLUMN "kind" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "code_hourly_totals"
	ALTER COLUMN "code" TYPE text COLLATE "C",
	ALTER COLUMN "registry" TYPE text COLLATE "C",
	ALTER COLUMN "kind" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "chain_daily_totals"
	ALTER COLUMN "kind" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "chain_hourly_totals"
	ALTER COLUMN "kind" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "code_day_sender_refs"
	ALTER COLUMN "code" TYPE text COLLATE "C",
	ALTER COLUMN "sender" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "code_daily_sender_counts"
	ALTER COLUMN "code" TYPE text COLLATE "C",
	ALTER COLUMN "registry" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "chain_daily_senders"
	ALTER COLUMN "sender" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "window_bounds"
	ALTER COLUMN "name" TYPE text COLLATE "C",
	ALTER COLUMN "subject" TYPE text COLLATE "C";
--> statement-breakpoint
-- its generated column "valid" reads the code: dropped while the code changes, then computed again (same expression as 0008)
ALTER TABLE "code_window_totals" DROP COLUMN "valid";
--> statement-breakpoint
ALTER TABLE "code_window_totals"
	ALTER COLUMN "window_name" TYPE text COLLATE "C",
	ALTER COLUMN "code" TYPE text COLLATE "C",
	ALTER COLUMN "registry" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "code_window_totals" ADD COLUMN "valid" boolean GENERATED ALWAYS AS (code ~ '^[0-9a-z_]{1,32}$') STORED;
--> statement-breakpoint
ALTER TABLE "window_sender_refs"
	ALTER COLUMN "window_name" TYPE text COLLATE "C",
	ALTER COLUMN "sender" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "sender_window_counts"
	ALTER COLUMN "window_name" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "window_code_sender_refs"
	ALTER COLUMN "window_name" TYPE text COLLATE "C",
	ALTER COLUMN "code" TYPE text COLLATE "C",
	ALTER COLUMN "sender" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "code_sender_window_counts"
	ALTER COLUMN "window_name" TYPE text COLLATE "C",
	ALTER COLUMN "code" TYPE text COLLATE "C",
	ALTER COLUMN "registry" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "attribution_events"
	ALTER COLUMN "type" TYPE text COLLATE "C",
	ALTER COLUMN "code" TYPE text COLLATE "C",
	ALTER COLUMN "registry" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "attribution_events_staged"
	ALTER COLUMN "type" TYPE text COLLATE "C",
	ALTER COLUMN "codes" TYPE text[] COLLATE "C",
	ALTER COLUMN "registries" TYPE text[] COLLATE "C";
--> statement-breakpoint
ALTER TABLE "builder_codes"
	ALTER COLUMN "code" TYPE text COLLATE "C",
	ALTER COLUMN "wallet_address" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "notification_api_keys"
	ALTER COLUMN "key_hash" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "notification_apps"
	ALTER COLUMN "app_url" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "notification_pins"
	ALTER COLUMN "app_url" TYPE text COLLATE "C",
	ALTER COLUMN "wallet_address" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "notifications"
	ALTER COLUMN "app_url" TYPE text COLLATE "C",
	ALTER COLUMN "content_hash" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "notification_deliveries"
	ALTER COLUMN "wallet_address" TYPE text COLLATE "C",
	ALTER COLUMN "content_hash" TYPE text COLLATE "C",
	ALTER COLUMN "status" TYPE text COLLATE "C";
--> statement-breakpoint
ALTER TABLE "notification_inbox"
	ALTER COLUMN "wallet_address" TYPE text COLLATE "C";
