DROP INDEX `deliveries_due`;--> statement-breakpoint
ALTER TABLE `deliveries` ADD `line` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `deliveries_line` ON `deliveries` (`listener_seq`,`state`,`message_seq`) WHERE line = 1;--> statement-breakpoint
CREATE INDEX `deliveries_due` ON `deliveries` (`next_attempt_at`) WHERE state = 'pending' AND line = 0;--> statement-breakpoint
ALTER TABLE `listeners` ADD `rate_next_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `listeners_fifo` ON `listeners` (`seq`) WHERE ordering = 'fifo';