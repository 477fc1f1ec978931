ALTER TABLE "deliveries" ADD COLUMN "line" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "listeners" ADD COLUMN "rate_next_at" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "deliveries_line" ON "deliveries" USING btree ("listener_seq","state","message_seq") WHERE line = 1;