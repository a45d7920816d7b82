-- Stream events inserted at commit, once per statement, instead of renumbered row by row (0017).
--
-- 0017 inserted each event with a placeholder id and renumbered it at commit in a deferred row trigger: one
-- PL/pgSQL call and one UPDATE (a second version of the row, two more index entries) per event, about 7 µs
-- each, and a dense chain writes one event per range and code. Here the statement writes its events as one
-- row of arrays into an unlogged staging table, and a deferred trigger on that row inserts them at commit,
-- under the same transaction-level advisory lock: ids are still handed out in visibility order (once an id is
-- visible, every smaller id that will ever exist is visible too), and each event is written once.
--
-- The staging row is deleted by the trigger that reads it, in its own transaction: the table is empty outside
-- a commit in progress. Unlogged, because what it holds never outlives the transaction that wrote it (a crash
-- loses that transaction anyway).
CREATE UNLOGGED TABLE "attribution_events_staged" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
	"type" text NOT NULL,
	"chain_ids" integer[] NOT NULL,
	"codes" text[] NOT NULL,
	"registries" text[] NOT NULL,
	"from_blocks" bigint[] NOT NULL,
	"to_blocks" bigint[] NOT NULL,
	"attributions" integer[] NOT NULL
);
--> statement-breakpoint
DROP TRIGGER "attribution_events_number_at_commit" ON "attribution_events";
--> statement-breakpoint
DROP FUNCTION attribution_events_number_at_commit();
--> statement-breakpoint
CREATE FUNCTION attribution_events_publish_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- re-entrant within the transaction: taken at the first staged row, released after the commit is visible
  PERFORM pg_advisory_xact_lock(hashtext('attribution-events-visibility-order'));
  -- ids are taken as the rows are inserted, in the order the statement staged them
  INSERT INTO attribution_events (type, chain_id, code, registry, from_block, to_block, attributions)
  SELECT NEW.type, e.chain_id, e.code, e.registry, e.from_block, e.to_block, e.attributions
  FROM unnest(NEW.chain_ids, NEW.codes, NEW.registries, NEW.from_blocks, NEW.to_blocks, NEW.attributions)
    WITH ORDINALITY AS e(chain_id, code, registry, from_block, to_block, attributions, n)
  ORDER BY e.n;
  DELETE FROM attribution_events_staged WHERE id = NEW.id;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER attribution_events_publish_at_commit
  AFTER INSERT ON attribution_events_staged
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION attribution_events_publish_at_commit();
