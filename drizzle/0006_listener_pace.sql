ALTER TABLE `deliveries` ADD `line` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `deliveries_line` ON `deliveries` (`listener_seq`,`state`,`message_seq`) WHERE line = 1 AND state IN ('pending', 'sending');--> statement-breakpoint
ALTER TABLE `listeners` ADD `rate_next_at` integer DEFAULT 0 NOT NULL;