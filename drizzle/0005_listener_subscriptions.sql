CREATE TABLE `listener_filters` (
	`id` integer PRIMARY KEY NOT NULL,
	`listener_seq` integer NOT NULL,
	`upto_seq` integer NOT NULL,
	`filter` text,
	FOREIGN KEY (`listener_seq`) REFERENCES `listeners`(`seq`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `listener_filters_listener` ON `listener_filters` (`listener_seq`,`upto_seq`);--> statement-breakpoint
ALTER TABLE `events` ADD `portal_session_id` text;--> statement-breakpoint
ALTER TABLE `events` ADD `details` text;--> statement-breakpoint
ALTER TABLE `listeners` ADD `filter` text;--> statement-breakpoint
ALTER TABLE `listeners` ADD `headers` text;--> statement-breakpoint
ALTER TABLE `listeners` ADD `rate_limit` integer;--> statement-breakpoint
ALTER TABLE `listeners` ADD `concurrency` integer;--> statement-breakpoint
ALTER TABLE `listeners` ADD `ordering` text DEFAULT 'unordered' NOT NULL;--> statement-breakpoint
CREATE INDEX `listeners_filtered` ON `listeners` (`queue_id`) WHERE filter IS NOT NULL;--> statement-breakpoint
ALTER TABLE `messages` ADD `only_listener` integer;--> statement-breakpoint
ALTER TABLE `orgs` ADD `events_queue_id` text;