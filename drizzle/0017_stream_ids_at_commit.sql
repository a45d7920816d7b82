-- Stream event ids in the order events become visible (issue 21.1).
--
-- An identity value is taken when a row is inserted, but concurrent commits become visible in another
-- order: a client that saw id 74 and resumed "after 74" never got ids 1..50 of a commit still running.
-- Here every inserted event is renumbered at its transaction's commit (a deferred constraint trigger),
-- under a transaction-level advisory lock held until the commit has made the rows visible. Ids are
-- therefore handed out in visibility order: once an id is visible, every smaller id that will ever exist
-- is visible too (or belonged to a transaction that rolled back), so "every event after N" misses nothing.
-- Only the end of each commit is serialized; the identity value taken at insert is a placeholder no
-- reader ever sees (it is replaced before the row becomes visible).
CREATE FUNCTION attribution_events_number_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- re-entrant within the transaction: taken at the first event, released after the commit is visible
  PERFORM pg_advisory_xact_lock(hashtext('attribution-events-visibility-order'));
  UPDATE attribution_events SET id = DEFAULT WHERE id = NEW.id;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER attribution_events_number_at_commit
  AFTER INSERT ON attribution_events
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION attribution_events_number_at_commit();
