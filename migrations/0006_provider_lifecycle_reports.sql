-- Provider lifecycle reports: a provider telling us something happened to one of our sandboxes
-- (interrupted, terminated, relocated). One row per report, keyed by the report's idempotency key
-- (provider_id, report_id) and immutable once committed: a replay with the same canonical body
-- (body_digest) gets this row back, a different body under the same key is refused.
--
-- A report is not proof of anything at the provider. It is reconciled against the Environment's
-- current lease under the Environment lock, and the outcome is kept with the lease it was compared
-- with. Only an `applied` report feeds the machine, and then only a read-only event that asks for
-- a fresh exact observation (event_type): nothing is released because of a report.
CREATE TABLE provider_lifecycle_reports (
  provider_id               text NOT NULL,
  report_id                 text NOT NULL,
  body_digest               text NOT NULL,
  environment_id            text NOT NULL REFERENCES environments (environment_id),
  operation_id              text NOT NULL,
  resource_generation       integer NOT NULL CHECK (resource_generation >= 1),
  provider_fence            integer NOT NULL CHECK (provider_fence >= 1),
  resource_id               text NOT NULL,
  -- interrupted: execution paused, preempted or suspended (it may come back);
  -- terminated: the provider says the sandbox stopped for good;
  -- relocated: the sandbox was moved to another placement (node, Pod).
  kind                      text NOT NULL CHECK (kind IN ('interrupted', 'terminated', 'relocated')),
  -- The provider's clock, as reported; ours when we received it.
  observed_at               timestamptz NOT NULL,
  received_at               timestamptz NOT NULL,
  -- applied: it names the current lease with its exact fences;
  -- stale-fence: it names the current lease (operation, resource generation) under another provider fence;
  -- not-current: it names another lease, provider or resource than the current lease's;
  -- no-lease: the Environment had no current lease.
  outcome                   text NOT NULL CHECK (outcome IN ('applied', 'stale-fence', 'no-lease', 'not-current')),
  -- The current lease it was compared with, as read under the lock (all null for no-lease).
  lease_resource_generation integer,
  lease_provider_fence      integer,
  lease_state               text,
  lease_revision            bigint,
  -- The event an applied report asked the machine for, and the Environment revision it committed
  -- at (null: none was asked, or the machine ignored it).
  event_type                text CHECK (event_type IN ('sandbox.describe', 'sandbox.reconcile')),
  event_revision            bigint,
  PRIMARY KEY (provider_id, report_id),
  CHECK ((outcome = 'no-lease') = (lease_revision IS NULL)),
  CHECK (event_type IS NULL OR outcome = 'applied'),
  CHECK (event_revision IS NULL OR event_type IS NOT NULL)
);
CREATE INDEX provider_lifecycle_reports_by_environment
  ON provider_lifecycle_reports (environment_id, received_at);
