PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_attempts` (
	`id` integer PRIMARY KEY NOT NULL,
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
INSERT INTO `__new_attempts`("id", "delivery_id", "attempt", "attempted_at", "status_code", "duration_ms", "error", "response") SELECT "id", "delivery_id", "attempt", "attempted_at", "status_code", "duration_ms", "error", "response" FROM `attempts`;--> statement-breakpoint
DROP TABLE `attempts`;--> statement-breakpoint
ALTER TABLE `__new_attempts` RENAME TO `attempts`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `attempts_delivery` ON `attempts` (`delivery_id`);--> statement-breakpoint
CREATE TABLE `__new_deliveries` (
	`id` integer PRIMARY KEY NOT NULL,
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
INSERT INTO `__new_deliveries`("id", "org_id", "message_seq", "listener_seq", "state", "attempt", "next_attempt_at", "lease_owner", "lease_expires_at", "last_status", "last_error", "held_since", "created_at", "updated_at") SELECT "id", "org_id", "message_seq", "listener_seq", "state", "attempt", "next_attempt_at", "lease_owner", "lease_expires_at", "last_status", "last_error", "held_since", "created_at", "updated_at" FROM `deliveries`;--> statement-breakpoint
DROP TABLE `deliveries`;--> statement-breakpoint
ALTER TABLE `__new_deliveries` RENAME TO `deliveries`;--> statement-breakpoint
CREATE INDEX `deliveries_message` ON `deliveries` (`message_seq`);--> statement-breakpoint
CREATE INDEX `deliveries_listener` ON `deliveries` (`listener_seq`);--> statement-breakpoint
CREATE INDEX `deliveries_due` ON `deliveries` (`next_attempt_at`) WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX `deliveries_listener_due` ON `deliveries` (`listener_seq`,`next_attempt_at`) WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX `deliveries_lease` ON `deliveries` (`lease_expires_at`) WHERE state = 'sending';--> statement-breakpoint
CREATE INDEX `deliveries_held` ON `deliveries` (`held_since`) WHERE held_since IS NOT NULL;--> statement-breakpoint
CREATE TABLE `__new_messages` (
	`seq` integer PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
	`org_id` text NOT NULL,
	`queue_id` text NOT NULL,
	`name` text,
	`data` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`queue_id`) REFERENCES `queues`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_messages`("seq", "id", "org_id", "queue_id", "name", "data", "created_at") SELECT "seq", "id", "org_id", "queue_id", "name", "data", "created_at" FROM `messages`;--> statement-breakpoint
DROP TABLE `messages`;--> statement-breakpoint
ALTER TABLE `__new_messages` RENAME TO `messages`;--> statement-breakpoint
CREATE UNIQUE INDEX `messages_id_unique` ON `messages` (`id`);--> statement-breakpoint
CREATE INDEX `messages_queue` ON `messages` (`queue_id`,`seq`);--> statement-breakpoint
CREATE INDEX `messages_org` ON `messages` (`org_id`,`seq`);