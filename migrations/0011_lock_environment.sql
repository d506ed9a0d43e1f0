-- The actor protocol's first round trip: take the Environment's advisory lock, then read its row,
-- in one call (actors/runtime.ts). A plain `SELECT … FROM environments, pg_advisory_xact_lock(…)`
-- would read under the snapshot its statement started with, i.e. before the lock wait, and miss a
-- revision committed while it waited; a VOLATILE function's query takes a new snapshot after the
-- lock is held, so the row read is the newest committed one.
CREATE FUNCTION lock_environment(target text) RETURNS SETOF environments
  LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('environment:' || target, 0));
  RETURN QUERY SELECT * FROM environments WHERE environment_id = target;
END
$$;
