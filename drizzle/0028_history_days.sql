-- The days the bulk path has committed blocks of: where a day's final rows put no code sender member (history,
-- older than every rolling window reads), its code senders per day are counted from its rows once it is complete.
CREATE TABLE "history_days" (
	"chain_id" integer NOT NULL,
	"day" date NOT NULL,
	"first_block" bigint NOT NULL,
	"last_block" bigint NOT NULL,
	"history" boolean NOT NULL,
	"rolled_up" boolean DEFAULT false NOT NULL,
	CONSTRAINT "history_days_chain_id_day_pk" PRIMARY KEY("chain_id","day")
);
