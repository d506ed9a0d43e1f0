-- When a lease was last described (a describe attempt opened for it). The observer takes Active
-- leases least recently observed first, so with more Active leases than one pass describes, every
-- lease is still reached within a few passes.
ALTER TABLE sandbox_leases ADD COLUMN observed_at timestamptz;
CREATE INDEX sandbox_leases_active_by_observation ON sandbox_leases (observed_at NULLS FIRST, updated_at)
  WHERE state = 'Active';
