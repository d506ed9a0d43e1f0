-- The simulated provider's change feed: a resource whose run finished or that was deleted takes the
-- next number of one sequence, so a follower can ask "what changed after n" through one index
-- instead of reading every row. Only those two changes count: they are what an Active lease must
-- learn of (creation and renewal are Sandlot's own calls, and phases move with time, not writes).
-- The number is taken in the writing statement, not at its commit, so a follower re-reads a short
-- window behind the highest number it saw (providers/simulated/change-feed.ts) rather than
-- trusting the order.
CREATE SEQUENCE IF NOT EXISTS simulated_resource_changes;
ALTER TABLE simulated_resources ADD COLUMN IF NOT EXISTS change_seq bigint;
ALTER TABLE simulated_resources ADD COLUMN IF NOT EXISTS changed_at timestamptz;

CREATE OR REPLACE FUNCTION simulated_resource_changed() RETURNS trigger AS $$
BEGIN
  NEW.change_seq := nextval('simulated_resource_changes');
  NEW.changed_at := clock_timestamp();
  RETURN NEW;
END
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS simulated_resource_changed ON simulated_resources;
CREATE TRIGGER simulated_resource_changed BEFORE UPDATE OF finished, deleted ON simulated_resources
  FOR EACH ROW
  WHEN (OLD.finished IS DISTINCT FROM NEW.finished OR OLD.deleted IS DISTINCT FROM NEW.deleted)
  EXECUTE FUNCTION simulated_resource_changed();

CREATE INDEX IF NOT EXISTS simulated_resources_changes ON simulated_resources (change_seq)
  WHERE change_seq IS NOT NULL;
