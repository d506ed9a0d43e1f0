-- The simulated provider's stand-in for a cluster, kept in PostgreSQL so its resources outlive a
-- process restart the way real ones would. Rows are only soft-deleted: operation_id stays taken, so
-- a released operation can never be provisioned again and one operation never makes two resources.
--
-- This set is applied only where the simulated provider is configured (ledger
-- simulated_schema_migrations). Databases migrated before the split already have the table from the
-- retired core migration 0003_simulated_resources.sql, with exactly this shape: IF NOT EXISTS makes
-- this file a no-op there, so their rows are kept.
CREATE TABLE IF NOT EXISTS simulated_resources (
  resource_id               text PRIMARY KEY,
  operation_id              text NOT NULL UNIQUE,
  owner                     jsonb NOT NULL,
  owner_hash                text NOT NULL,
  provider_fence            integer NOT NULL,
  lifecycle_generation      integer NOT NULL,
  resource_generation       integer NOT NULL,
  workspace                 jsonb NOT NULL,
  network_policy_generation integer NOT NULL,
  options                   jsonb NOT NULL,
  created_at_ms             bigint NOT NULL,
  deleted                   boolean NOT NULL DEFAULT false,
  deleted_at_ms             bigint,
  finished                  jsonb
);
-- listOwned: every live resource with one exact owner hash and provider fence.
CREATE INDEX IF NOT EXISTS simulated_resources_owned
  ON simulated_resources (owner_hash, provider_fence) WHERE NOT deleted;
