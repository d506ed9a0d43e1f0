-- The observer backs off a lease whose describes keep failing: observe_failures counts the
-- describes in a row that ended without an exact answer (reset by one that had it), and the lease
-- is not described again by the observer before observe_not_before. Inspection asked for by a
-- caller does not wait for it.
ALTER TABLE sandbox_leases ADD COLUMN observe_failures integer NOT NULL DEFAULT 0;
ALTER TABLE sandbox_leases ADD COLUMN observe_not_before timestamptz;
