CREATE TABLE `portal_session_listeners` (
	`session_id` text NOT NULL,
	`listener_id` text NOT NULL,
	PRIMARY KEY(`session_id`, `listener_id`),
	FOREIGN KEY (`session_id`) REFERENCES `portal_sessions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`listener_id`) REFERENCES `listeners`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `portal_session_listeners_listener` ON `portal_session_listeners` (`listener_id`);--> statement-breakpoint
CREATE TABLE `portal_sessions` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`org_id` text NOT NULL,
	`queue_id` text NOT NULL,
	`token_hash` text NOT NULL,
	`all_listeners` integer NOT NULL,
	`can_manage` integer NOT NULL,
	`allowed_origins` text NOT NULL,
	`brand_name` text,
	`brand_logo` text,
	`brand_accent` text,
	`return_url` text,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`revoked_at` integer,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`queue_id`) REFERENCES `queues`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `portal_sessions_id_unique` ON `portal_sessions` (`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `portal_sessions_token_hash_unique` ON `portal_sessions` (`token_hash`);--> statement-breakpoint
CREATE INDEX `portal_sessions_org` ON `portal_sessions` (`org_id`,`seq`);--> statement-breakpoint
CREATE INDEX `portal_sessions_expiry` ON `portal_sessions` (`expires_at`);