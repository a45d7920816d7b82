DROP TABLE "code_daily_senders" CASCADE;--> statement-breakpoint
DROP TABLE "code_sender_window_refs" CASCADE;--> statement-breakpoint
DROP TABLE "sender_window_refs" CASCADE;