-- A terminal lease's late sweeps that listed exactly, kept on the lease itself: the reconciler's
-- due-sweep scan reads it through a partial index instead of counting sweep attempts for every
-- terminal lease on every pass. A lease leaves the index when two sweeps listed exactly or twelve
-- were opened (store/leases.ts: LATE_SWEEPS, MAX_SWEEPS_OPENED; the literals here must match).
ALTER TABLE sandbox_leases ADD COLUMN sweeps_listed integer NOT NULL DEFAULT 0;
UPDATE sandbox_leases l SET sweeps_listed = (
  SELECT count(*) FROM provider_attempts a
   WHERE a.operation_id = l.operation_id AND a.kind = 'sweep' AND a.state = 'Succeeded')
 WHERE state IN ('Released', 'Failed');
DROP INDEX sandbox_leases_sweep_due;
CREATE INDEX sandbox_leases_sweep_due ON sandbox_leases (terminal_at)
  WHERE state IN ('Released', 'Failed') AND sweeps_listed < 2 AND late_sweeps < 12;
