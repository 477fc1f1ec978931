ALTER TABLE "events" ADD COLUMN "portal_session_id" text;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "details" text;--> statement-breakpoint
ALTER TABLE "listeners" ADD COLUMN "filter" text;--> statement-breakpoint
ALTER TABLE "listeners" ADD COLUMN "filter_rev" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "listeners" ADD COLUMN "headers" text;--> statement-breakpoint
ALTER TABLE "listeners" ADD COLUMN "rate_limit" integer;--> statement-breakpoint
ALTER TABLE "listeners" ADD COLUMN "concurrency" integer;--> statement-breakpoint
ALTER TABLE "listeners" ADD COLUMN "ordering" text DEFAULT 'unordered' NOT NULL;--> statement-breakpoint
ALTER TABLE "orgs" ADD COLUMN "events_queue_id" text;