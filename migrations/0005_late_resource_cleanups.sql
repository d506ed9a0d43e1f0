-- Late-resource cleanup: a valid provider resource of ours that no current lease owns (a create
-- that landed after its lease was terminal, a duplicate, an owned resource found with no lease).
-- The terminal lease row is never changed for it; the record is released through its own durable,
-- expiring claim and its own provider attempt (kind 'cleanup'), under the Environment's current
-- owner fence, with the saved source binding and fence as the provider request's identity.
CREATE TABLE late_resource_cleanups (
  cleanup_id                  text PRIMARY KEY,
  environment_id              text NOT NULL REFERENCES environments (environment_id),
  resource_id                 text NOT NULL,
  resource                    jsonb NOT NULL,
  found_by                    text NOT NULL CHECK (found_by IN ('late-result', 'owner-listing')),
  source_attempt_id           text,
  -- The source binding: the lease the resource was created for, exactly as it was stamped on it.
  source_operation_id         text NOT NULL,
  source_lifecycle_generation integer NOT NULL,
  source_resource_generation  integer NOT NULL,
  source_provider_fence       integer NOT NULL,
  owner_hash                  text NOT NULL,
  provider_options            jsonb NOT NULL,
  workspace                   jsonb,
  state                       text NOT NULL CHECK (state IN ('Pending', 'Claimed', 'Released')),
  claim_token                 text,
  claimed_at                  timestamptz,
  claim_expires_at            timestamptz,
  release_attempt_id          text,
  -- The Environment's owner fence that authorized the current claim (compare-and-swap on receipt).
  authorizing_fence           jsonb,
  receipt                     jsonb,
  last_error                  jsonb,
  revision                    bigint NOT NULL,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (environment_id, source_operation_id, resource_id)
);
CREATE INDEX late_resource_cleanups_open ON late_resource_cleanups (claim_expires_at NULLS FIRST, created_at)
  WHERE state IN ('Pending', 'Claimed');

-- A cleanup release is a provider call like any other: it has its attempt, written before the call;
-- so has the owner listing ('sweep') that looks for late resources of a terminal lease.
ALTER TABLE provider_attempts DROP CONSTRAINT provider_attempts_kind_check;
ALTER TABLE provider_attempts ADD CONSTRAINT provider_attempts_kind_check
  CHECK (kind IN ('provision', 'describe', 'listOwned', 'release', 'cleanup', 'sweep'));

-- A result that arrives after its attempt was settled by other evidence is still a fact about the
-- provider: it is kept here, next to the resolution it arrived after.
ALTER TABLE provider_attempts ADD COLUMN late_result jsonb;
ALTER TABLE provider_attempts ADD COLUMN late_result_at timestamptz;

-- A terminal lease is swept for late resources (an exact owner listing under its owner hash and
-- fence) a bounded number of times after it became terminal: a create that lands after the
-- lease's release receipt, whose result never arrives, is found that way.
ALTER TABLE sandbox_leases ADD COLUMN terminal_at timestamptz;
ALTER TABLE sandbox_leases ADD COLUMN late_sweeps integer NOT NULL DEFAULT 0;
CREATE INDEX sandbox_leases_sweep_due ON sandbox_leases (terminal_at)
  WHERE state IN ('Released', 'Failed') AND late_sweeps < 2;

-- Who provisioned the lease: a provider result is committed only under that subject's fresh
-- authority and the run's pinned selection; otherwise the lease is parked (never dispatchable).
ALTER TABLE sandbox_leases ADD COLUMN requested_by text;

-- Lease expiry (SANDLOT_LEASE_TTL_MS): when the lease expires (null: never), and when its expiry
-- was fenced (the current fencing generation moved). Expiry never releases a sandbox by itself.
ALTER TABLE sandbox_leases ADD COLUMN expires_at timestamptz;
ALTER TABLE sandbox_leases ADD COLUMN expired_at timestamptz;
CREATE INDEX sandbox_leases_expiry_due ON sandbox_leases (expires_at)
  WHERE state = 'Active' AND expires_at IS NOT NULL AND expired_at IS NULL;
