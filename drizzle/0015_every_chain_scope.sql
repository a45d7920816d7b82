CREATE TABLE "every_chain_scope" (
	"id" integer PRIMARY KEY NOT NULL,
	"kept" boolean NOT NULL,
	"only_chain" integer
);
--> statement-breakpoint
-- a database indexed before this migration holds every-chain rows already: they stay kept. A new one starts
-- with none, and keeps them only once a second chain has aggregates (src/store/every-chain.ts)
INSERT INTO "every_chain_scope" ("id", "kept", "only_chain")
SELECT 1, EXISTS (SELECT 1 FROM "attributions") OR EXISTS (SELECT 1 FROM "code_window_totals") OR EXISTS (SELECT 1 FROM "code_day_sender_refs"), NULL;
