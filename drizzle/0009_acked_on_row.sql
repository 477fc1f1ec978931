ALTER TABLE `deliveries` ADD `acked_at` integer;--> statement-breakpoint
ALTER TABLE `deliveries` ADD `acked_ms` integer;--> statement-breakpoint
ALTER TABLE `deliveries` ADD `acked_response` text;