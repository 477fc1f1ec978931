ALTER TABLE "attempts" DROP CONSTRAINT "attempts_delivery_id_deliveries_id_fk";
--> statement-breakpoint
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_message_seq_messages_seq_fk";
--> statement-breakpoint
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_listener_seq_listeners_seq_fk";
--> statement-breakpoint
ALTER TABLE "messages" DROP CONSTRAINT "messages_queue_id_queues_id_fk";
--> statement-breakpoint
-- Deletes cascade as the dropped foreign keys did, by statement-level triggers: one statement per deleting
-- statement, where a foreign key checked each inserted row with a query of its own (store/postgres/schema.ts).
CREATE FUNCTION fanout_queues_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM messages m USING gone g WHERE m.queue_id = g.id;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER queues_cascade AFTER DELETE ON queues REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION fanout_queues_deleted();
--> statement-breakpoint
CREATE FUNCTION fanout_messages_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM deliveries d USING gone g WHERE d.message_seq = g.seq;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER messages_cascade AFTER DELETE ON messages REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION fanout_messages_deleted();
--> statement-breakpoint
CREATE FUNCTION fanout_listeners_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM deliveries d USING gone g WHERE d.listener_seq = g.seq;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER listeners_cascade AFTER DELETE ON listeners REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION fanout_listeners_deleted();
--> statement-breakpoint
CREATE FUNCTION fanout_deliveries_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM attempts a USING gone g WHERE a.delivery_id = g.id;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER deliveries_cascade AFTER DELETE ON deliveries REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION fanout_deliveries_deleted();
