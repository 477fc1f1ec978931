CREATE TABLE `fanout` (
	`id` integer PRIMARY KEY NOT NULL,
	`message_seq` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `listeners` ADD `from_seq` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Every message of a database made before this migration already has its deliveries (written by its publish).
INSERT INTO `fanout` (`id`, `message_seq`) SELECT 1, coalesce(max(`seq`), 0) FROM `messages`;
