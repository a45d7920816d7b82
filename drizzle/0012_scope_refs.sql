CREATE TABLE "code_day_sender_refs" (
	"code" text NOT NULL,
	"day" date NOT NULL,
	"sender" text NOT NULL,
	"refs" jsonb NOT NULL,
	CONSTRAINT "code_day_sender_refs_code_day_sender_pk" PRIMARY KEY("code","day","sender")
);
--> statement-breakpoint
CREATE TABLE "window_code_sender_refs" (
	"window_name" text NOT NULL,
	"code" text NOT NULL,
	"sender" text NOT NULL,
	"refs" jsonb NOT NULL,
	CONSTRAINT "window_code_sender_refs_window_name_code_sender_pk" PRIMARY KEY("window_name","code","sender")
);
--> statement-breakpoint
CREATE TABLE "window_sender_refs" (
	"window_name" text NOT NULL,
	"sender" text NOT NULL,
	"refs" jsonb NOT NULL,
	CONSTRAINT "window_sender_refs_window_name_sender_pk" PRIMARY KEY("window_name","sender")
);
--> statement-breakpoint
-- Hand-written: the reference counts kept so far (one row per scope in 0004-0007), one row per group with
-- every scope of it as `registry|chain_id` (code senders) or the chain scope (window senders).
INSERT INTO "code_day_sender_refs" (code, day, sender, refs)
SELECT code, day, sender, jsonb_object_agg(registry || '|' || chain_id, attributions)
FROM "code_daily_senders" WHERE attributions > 0 GROUP BY 1, 2, 3;--> statement-breakpoint
INSERT INTO "window_sender_refs" (window_name, sender, refs)
SELECT window_name, sender, jsonb_object_agg(scope::text, attributions)
FROM "sender_window_refs" WHERE attributions > 0 GROUP BY 1, 2;--> statement-breakpoint
INSERT INTO "window_code_sender_refs" (window_name, code, sender, refs)
SELECT window_name, code, sender, jsonb_object_agg(registry || '|' || chain_id, attributions)
FROM "code_sender_window_refs" WHERE attributions > 0 GROUP BY 1, 2, 3;
