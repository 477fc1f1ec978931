CREATE TABLE `idempotency_keys` (
	`key_hash` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`fingerprint` text NOT NULL,
	`status` integer,
	`response` blob,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_created` ON `idempotency_keys` (`created_at`);--> statement-breakpoint
CREATE TABLE `readiness` (
	`id` integer PRIMARY KEY NOT NULL,
	`checked_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `replays` (
	`id` integer PRIMARY KEY NOT NULL,
	`listener_seq` integer NOT NULL,
	`since` integer NOT NULL,
	`until` integer NOT NULL,
	`only` text NOT NULL,
	`to_seq` integer NOT NULL,
	`done_seq` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`listener_seq`) REFERENCES `listeners`(`seq`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
DROP INDEX `deliveries_listener`;--> statement-breakpoint
ALTER TABLE `deliveries` ADD `cycle` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
CREATE INDEX `deliveries_listener` ON `deliveries` (`listener_seq`,`message_seq`);--> statement-breakpoint
ALTER TABLE `attempts` ADD `cycle` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `listeners` ADD `enabled` integer DEFAULT true NOT NULL;