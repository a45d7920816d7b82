CREATE TABLE "code_window_totals" (
	"window_name" text NOT NULL,
	"scope" integer NOT NULL,
	"code" text NOT NULL,
	"registry" text NOT NULL,
	"transactions" bigint NOT NULL,
	"user_operations" bigint NOT NULL,
	"reverted" bigint NOT NULL,
	CONSTRAINT "code_window_totals_window_name_scope_code_registry_pk" PRIMARY KEY("window_name","scope","code","registry")
);
--> statement-breakpoint
CREATE TABLE "sender_window_counts" (
	"window_name" text NOT NULL,
	"scope" integer NOT NULL,
	"senders" bigint NOT NULL,
	CONSTRAINT "sender_window_counts_window_name_scope_pk" PRIMARY KEY("window_name","scope")
);
--> statement-breakpoint
CREATE TABLE "sender_window_refs" (
	"window_name" text NOT NULL,
	"scope" integer NOT NULL,
	"sender" text NOT NULL,
	"attributions" bigint NOT NULL,
	CONSTRAINT "sender_window_refs_window_name_scope_sender_pk" PRIMARY KEY("window_name","scope","sender")
);
--> statement-breakpoint
CREATE TABLE "window_bounds" (
	"name" text PRIMARY KEY NOT NULL,
	"subject" text NOT NULL,
	"from_at" timestamp with time zone NOT NULL,
	"until_at" timestamp with time zone NOT NULL,
	"ready" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
-- Hand-written: the windows exist before any process commits (a commit only adds to rows it can lock),
-- not ready yet: the first read builds each from the totals already stored (src/analytics/rolling-windows.ts).
INSERT INTO "window_bounds" ("name", "subject", "from_at", "until_at") VALUES
  ('24h', 'code', '-infinity', '-infinity'), ('prev:24h', 'code', '-infinity', '-infinity'),
  ('7d', 'code', '-infinity', '-infinity'), ('prev:7d', 'code', '-infinity', '-infinity'),
  ('30d', 'code', '-infinity', '-infinity'), ('prev:30d', 'code', '-infinity', '-infinity'),
  ('all', 'code', '-infinity', '-infinity'),
  ('senders:24h', 'sender', '-infinity', '-infinity'), ('senders:7d', 'sender', '-infinity', '-infinity'),
  ('senders:30d', 'sender', '-infinity', '-infinity'), ('senders:all', 'sender', '-infinity', '-infinity');
