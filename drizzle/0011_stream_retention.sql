CREATE TABLE "stream_retention" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"pruned_through" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
-- Hand-written: the one row, nothing pruned yet.
INSERT INTO "stream_retention" ("id", "pruned_through") VALUES (1, 0) ON CONFLICT DO NOTHING;
