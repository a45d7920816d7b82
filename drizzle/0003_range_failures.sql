ALTER TABLE "ranges" ADD COLUMN "attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "ranges" ADD COLUMN "last_error" text;--> statement-breakpoint
ALTER TABLE "ranges" ADD COLUMN "last_error_at" timestamp with time zone;