-- Hand-written. Senders were stored as spelled: a transaction's `from` as the node wrote it, a UserOperation's sender
-- EIP-55 (checksummed) from the calldata. Unique senders are counted by that text, so one wallet that both sent a
-- transaction and a UserOperation (an EIP-7702 account does) counted twice. From now on every sender is stored
-- lowercase (src/attribution/records.ts); this moves what was stored before, and the counts with it.
--
-- The sender windows are built again from the day tables on their next move (src/store/rolling-windows.ts), only
-- where a sender changes spelling.
UPDATE "window_bounds" SET "ready" = false
WHERE "subject" <> 'code' AND EXISTS (SELECT 1 FROM "attributions" WHERE "sender" <> lower("sender"));
--> statement-breakpoint
UPDATE "attributions" SET "sender" = lower("sender") WHERE "sender" <> lower("sender");
--> statement-breakpoint
-- a chain's day: every spelling's attributions summed into the lowercase row
WITH moved AS (
	DELETE FROM "chain_daily_senders" WHERE "sender" <> lower("sender")
	RETURNING "chain_id", "day", lower("sender") AS "sender", "attributions"
)
INSERT INTO "chain_daily_senders" AS t ("chain_id", "day", "sender", "attributions")
SELECT "chain_id", "day", "sender", sum("attributions") FROM moved GROUP BY 1, 2, 3
ON CONFLICT ("day", "chain_id", "sender") DO UPDATE SET "attributions" = t."attributions" + excluded."attributions";
--> statement-breakpoint
-- a code's day: every spelling's references summed scope by scope into the lowercase row, and each scope's count
-- of senders, which counted the wallet once per spelling above 0, made to count it once
WITH moved AS (
	DELETE FROM "code_day_sender_refs" WHERE "sender" <> lower("sender")
	RETURNING "code", "day", lower("sender") AS "sender", "refs"
),
spellings AS (
	SELECT "code", "day", "sender", "refs" FROM moved
	UNION ALL
	-- the lowercase rows as they stood before this statement
	SELECT r."code", r."day", r."sender", r."refs" FROM "code_day_sender_refs" r
	WHERE (r."code", r."day", r."sender") IN (SELECT "code", "day", "sender" FROM moved)
),
per_scope AS (
	SELECT "code", "day", "sender", scope.key AS "scope", sum(scope.value::bigint) AS "refs",
		count(*) FILTER (WHERE scope.value::bigint > 0) AS "counted"
	FROM spellings CROSS JOIN LATERAL jsonb_each_text("refs") AS scope
	GROUP BY 1, 2, 3, 4
),
recounted AS (
	UPDATE "code_daily_sender_counts" c SET "senders" = c."senders" - o."extra"
	FROM (
		SELECT "code", split_part("scope", '|', 1) AS "registry", split_part("scope", '|', 2)::int AS "chain_id", "day",
			sum("counted" - CASE WHEN "refs" > 0 THEN 1 ELSE 0 END) AS "extra"
		FROM per_scope GROUP BY 1, 2, 3, 4
	) o
	WHERE c."code" = o."code" AND c."registry" = o."registry" AND c."chain_id" = o."chain_id" AND c."day" = o."day" AND o."extra" <> 0
	RETURNING 1
)
INSERT INTO "code_day_sender_refs" AS t ("code", "day", "sender", "refs")
SELECT "code", "day", "sender", jsonb_object_agg("scope", "refs") FROM per_scope GROUP BY 1, 2, 3
ON CONFLICT ("code", "day", "sender") DO UPDATE SET "refs" = excluded."refs";
