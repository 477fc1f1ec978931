CREATE TABLE `api_keys` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`org_id` text NOT NULL,
	`name` text NOT NULL,
	`status` text NOT NULL,
	`scopes` text NOT NULL,
	`key_hash` text NOT NULL,
	`owner` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_id_unique` ON `api_keys` (`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_key_hash_unique` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE INDEX `api_keys_org` ON `api_keys` (`org_id`,`seq`);--> statement-breakpoint
CREATE TABLE `attempts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`delivery_id` integer NOT NULL,
	`attempt` integer NOT NULL,
	`attempted_at` integer NOT NULL,
	`status_code` integer,
	`duration_ms` integer NOT NULL,
	`error` text,
	`response` text,
	FOREIGN KEY (`delivery_id`) REFERENCES `deliveries`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `attempts_delivery` ON `attempts` (`delivery_id`);--> statement-breakpoint
CREATE TABLE `deliveries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`org_id` text NOT NULL,
	`message_seq` integer NOT NULL,
	`listener_seq` integer NOT NULL,
	`state` text NOT NULL,
	`attempt` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer,
	`lease_owner` text,
	`lease_expires_at` integer,
	`last_status` integer,
	`last_error` text,
	`held_since` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`message_seq`) REFERENCES `messages`(`seq`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`listener_seq`) REFERENCES `listeners`(`seq`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `deliveries_message` ON `deliveries` (`message_seq`);--> statement-breakpoint
CREATE INDEX `deliveries_listener` ON `deliveries` (`listener_seq`);--> statement-breakpoint
CREATE INDEX `deliveries_due` ON `deliveries` (`next_attempt_at`) WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX `deliveries_listener_due` ON `deliveries` (`listener_seq`,`next_attempt_at`) WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX `deliveries_lease` ON `deliveries` (`lease_expires_at`) WHERE state = 'sending';--> statement-breakpoint
CREATE INDEX `deliveries_held` ON `deliveries` (`held_since`) WHERE held_since IS NOT NULL;--> statement-breakpoint
CREATE TABLE `events` (
	`id` text NOT NULL,
	`org_id` text NOT NULL,
	`type` text NOT NULL,
	`stored_at` integer NOT NULL,
	`api_key_id` text,
	`api_key_name` text,
	`queue_id` text,
	`queue_name` text,
	`listener_id` text,
	`listener_name` text,
	`message_id` text,
	`message_name` text
);
--> statement-breakpoint
CREATE INDEX `events_org_time` ON `events` (`org_id`,`stored_at`,`id`);--> statement-breakpoint
CREATE TABLE `listeners` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`org_id` text NOT NULL,
	`queue_id` text NOT NULL,
	`name` text NOT NULL,
	`notify_url` text NOT NULL,
	`liveness_url` text NOT NULL,
	`secret` text NOT NULL,
	`previous_secret` text,
	`previous_secret_until` integer,
	`liveness_state` text NOT NULL,
	`success_count` integer DEFAULT 0 NOT NULL,
	`failure_count` integer DEFAULT 0 NOT NULL,
	`failures_in_row` integer DEFAULT 0 NOT NULL,
	`next_probe_at` integer NOT NULL,
	`down_since` integer,
	`acknowledged_count` integer DEFAULT 0 NOT NULL,
	`missed_count` integer DEFAULT 0 NOT NULL,
	`missed` text DEFAULT '[]' NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`queue_id`) REFERENCES `queues`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `listeners_id_unique` ON `listeners` (`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `listeners_queue_name` ON `listeners` (`queue_id`,`name`);--> statement-breakpoint
CREATE INDEX `listeners_org` ON `listeners` (`org_id`,`seq`);--> statement-breakpoint
CREATE INDEX `listeners_probe` ON `listeners` (`next_probe_at`);--> statement-breakpoint
CREATE TABLE `messages` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`org_id` text NOT NULL,
	`queue_id` text NOT NULL,
	`name` text,
	`data` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`queue_id`) REFERENCES `queues`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `messages_id_unique` ON `messages` (`id`);--> statement-breakpoint
CREATE INDEX `messages_queue` ON `messages` (`queue_id`,`seq`);--> statement-breakpoint
CREATE INDEX `messages_org` ON `messages` (`org_id`,`seq`);--> statement-breakpoint
CREATE TABLE `orgs` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `orgs_name_unique` ON `orgs` (`name`);--> statement-breakpoint
CREATE TABLE `queues` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`org_id` text NOT NULL,
	`name` text NOT NULL,
	`schema` text,
	`schema_id` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `orgs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `queues_id_unique` ON `queues` (`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `queues_org_name` ON `queues` (`org_id`,`name`);