CREATE TABLE "notification_api_keys" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"project_id" uuid NOT NULL,
	"key_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone,
	CONSTRAINT "notification_api_keys_key_hash_unique" UNIQUE("key_hash")
);
--> statement-breakpoint
CREATE TABLE "notification_apps" (
	"app_url" text PRIMARY KEY NOT NULL,
	"project_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "notification_deliveries" (
	"notification_id" uuid NOT NULL,
	"wallet_address" text NOT NULL,
	"content_hash" text NOT NULL,
	"status" text DEFAULT 'queued' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"delivered_at" timestamp with time zone,
	CONSTRAINT "notification_deliveries_notification_id_wallet_address_pk" PRIMARY KEY("notification_id","wallet_address")
);
--> statement-breakpoint
CREATE TABLE "notification_inbox" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "notification_inbox_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"wallet_address" text NOT NULL,
	"notification_id" uuid NOT NULL,
	"delivered_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "notification_pins" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "notification_pins_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"app_url" text NOT NULL,
	"wallet_address" text NOT NULL,
	"pinned" boolean NOT NULL,
	"notifications_enabled" boolean NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "notification_pins_enabled_only_when_pinned" CHECK ("notification_pins"."pinned" or not "notification_pins"."notifications_enabled")
);
--> statement-breakpoint
CREATE TABLE "notification_projects" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"whitelisted" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "notifications" (
	"id" uuid PRIMARY KEY NOT NULL,
	"project_id" uuid NOT NULL,
	"app_url" text NOT NULL,
	"title" text NOT NULL,
	"message" text NOT NULL,
	"target_path" text,
	"content_hash" text NOT NULL,
	"recipient_count" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "notification_api_keys" ADD CONSTRAINT "notification_api_keys_project_id_notification_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."notification_projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_apps" ADD CONSTRAINT "notification_apps_project_id_notification_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."notification_projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD CONSTRAINT "notification_deliveries_notification_id_notifications_id_fk" FOREIGN KEY ("notification_id") REFERENCES "public"."notifications"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_inbox" ADD CONSTRAINT "notification_inbox_notification_id_notifications_id_fk" FOREIGN KEY ("notification_id") REFERENCES "public"."notifications"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_project_id_notification_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."notification_projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "notification_apps_project_idx" ON "notification_apps" USING btree ("project_id");--> statement-breakpoint
CREATE INDEX "notification_deliveries_duplicate_idx" ON "notification_deliveries" USING btree ("content_hash","wallet_address","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "notification_inbox_once_idx" ON "notification_inbox" USING btree ("notification_id","wallet_address");--> statement-breakpoint
CREATE INDEX "notification_inbox_wallet_idx" ON "notification_inbox" USING btree ("wallet_address","id");--> statement-breakpoint
CREATE UNIQUE INDEX "notification_pins_app_wallet_idx" ON "notification_pins" USING btree ("app_url","wallet_address");--> statement-breakpoint
CREATE INDEX "notification_pins_listing_idx" ON "notification_pins" USING btree ("app_url","id") WHERE "notification_pins"."pinned";--> statement-breakpoint
CREATE INDEX "notification_pins_enabled_listing_idx" ON "notification_pins" USING btree ("app_url","id") WHERE "notification_pins"."pinned" and "notification_pins"."notifications_enabled";--> statement-breakpoint
CREATE INDEX "notifications_app_idx" ON "notifications" USING btree ("app_url","created_at");