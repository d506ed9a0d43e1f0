-- When an inspection first answered a lease ready for dispatch: the provision → readyForDispatch
-- histogram is observed once per lease, by the process whose inspection set it (workers/lease-timings.ts).
ALTER TABLE sandbox_leases ADD COLUMN first_ready_at timestamptz;
