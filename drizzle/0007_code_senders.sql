CREATE TABLE "code_daily_sender_counts" (
	"code" text NOT NULL,
	"registry" text NOT NULL,
	"chain_id" integer NOT NULL,
	"day" date NOT NULL,
	"senders" bigint NOT NULL,
	CONSTRAINT "code_daily_sender_counts_code_registry_chain_id_day_pk" PRIMARY KEY("code","registry","chain_id","day")
);
--> statement-breakpoint
CREATE TABLE "code_sender_window_counts" (
	"window_name" text NOT NULL,
	"code" text NOT NULL,
	"registry" text NOT NULL,
	"chain_id" integer NOT NULL,
	"senders" bigint NOT NULL,
	CONSTRAINT "code_sender_window_counts_window_name_code_registry_chain_id_pk" PRIMARY KEY("window_name","code","registry","chain_id")
);
--> statement-breakpoint
CREATE TABLE "code_sender_window_refs" (
	"window_name" text NOT NULL,
	"code" text NOT NULL,
	"registry" text NOT NULL,
	"chain_id" integer NOT NULL,
	"sender" text NOT NULL,
	"attributions" bigint NOT NULL,
	CONSTRAINT "code_sender_window_refs_window_name_code_registry_chain_id_sender_pk" PRIMARY KEY("window_name","code","registry","chain_id","sender")
);
--> statement-breakpoint
-- Hand-written: the code view's rolling 30 days, built on first read like the others (0006).
INSERT INTO "window_bounds" ("name", "subject", "from_at", "until_at") VALUES ('code-senders:30d', 'code-sender', '-infinity', '-infinity')
  ON CONFLICT DO NOTHING;--> statement-breakpoint
-- Backfill (hand-written): the every-chain (0) and any-registry ('*') scopes of the senders already stored, and the daily counts.
INSERT INTO "code_daily_senders" (code, registry, chain_id, day, sender, attributions)
SELECT d.code, s.registry, s.chain_id, d.day, d.sender, sum(d.attributions)
FROM "code_daily_senders" d
CROSS JOIN LATERAL (VALUES (d.registry, 0), ('*', d.chain_id), ('*', 0)) AS s(registry, chain_id)
WHERE d.chain_id <> 0 AND d.registry <> '*' AND d.attributions > 0
GROUP BY 1, 2, 3, 4, 5;--> statement-breakpoint
DELETE FROM "code_daily_sender_counts";--> statement-breakpoint
INSERT INTO "code_daily_sender_counts" (code, registry, chain_id, day, senders)
SELECT code, registry, chain_id, day, count(*) FROM "code_daily_senders" WHERE attributions > 0 GROUP BY 1, 2, 3, 4;
