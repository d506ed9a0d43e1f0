-- Sandbox leases: one row per resource generation of an Environment; old generations stay.
CREATE TABLE sandbox_leases (
  environment_id             text NOT NULL REFERENCES environments (environment_id),
  resource_generation        integer NOT NULL CHECK (resource_generation >= 1),
  operation_id               text NOT NULL UNIQUE,
  lifecycle_generation       integer NOT NULL,
  provider_fence             integer NOT NULL CHECK (provider_fence >= 1),
  current_fencing_generation integer NOT NULL CHECK (current_fencing_generation >= 1),
  state                      text NOT NULL CHECK (state IN ('Provisioning', 'Active', 'Releasing', 'ReconciliationRequired', 'Released', 'Failed')),
  idempotency_key            text NOT NULL,
  run_selection              jsonb NOT NULL,
  provider_identity          jsonb NOT NULL,
  provider_options           jsonb NOT NULL,
  recovery_request           jsonb NOT NULL,
  workspace                  jsonb NOT NULL,
  network_policy_generation  integer NOT NULL,
  resource                   jsonb,
  release_receipt            jsonb,
  failure                    jsonb,
  revision                   bigint NOT NULL,
  created_at                 timestamptz NOT NULL DEFAULT now(),
  updated_at                 timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment_id, resource_generation),
  UNIQUE (environment_id, idempotency_key)
);
-- One current lease per Environment: the states that consume the slot.
CREATE UNIQUE INDEX sandbox_leases_one_current ON sandbox_leases (environment_id)
  WHERE state IN ('Provisioning', 'Active', 'Releasing', 'ReconciliationRequired');

-- Every external provider call: written before the call, resolved with its exact result.
CREATE TABLE provider_attempts (
  attempt_id                 text PRIMARY KEY,
  environment_id             text NOT NULL REFERENCES environments (environment_id),
  operation_id               text NOT NULL,
  kind                       text NOT NULL CHECK (kind IN ('provision', 'describe', 'listOwned', 'release')),
  tenant_id                  text NOT NULL,
  project_id                 text NOT NULL,
  run_id                     text NOT NULL,
  lifecycle_generation       integer NOT NULL,
  resource_generation        integer NOT NULL,
  provider_fence             integer NOT NULL,
  fencing_generation         integer NOT NULL,
  request                    jsonb NOT NULL,
  request_fingerprint        text NOT NULL,
  state                      text NOT NULL CHECK (state IN ('Pending', 'Dispatched', 'Succeeded', 'Failed', 'Unknown', 'Superseded')),
  deadline_at                timestamptz,
  dispatched_at              timestamptz,
  resolved_at                timestamptz,
  dispatch_count             integer NOT NULL DEFAULT 0,
  receipt                    jsonb,
  error                      jsonb,
  resolution                 text,
  created_at                 timestamptz NOT NULL DEFAULT now(),
  updated_at                 timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX provider_attempts_by_operation ON provider_attempts (operation_id, created_at);
CREATE INDEX provider_attempts_unresolved ON provider_attempts (environment_id)
  WHERE state IN ('Pending', 'Dispatched', 'Unknown');
CREATE INDEX provider_attempts_dispatched_deadline ON provider_attempts (deadline_at) WHERE state = 'Dispatched';

-- Workspace volumes (embedded Workspace owner): attached by CAS before dispatch, detached only
-- after the provider confirmed release.
CREATE TABLE workspace_volumes (
  volume_id            text PRIMARY KEY,
  environment_id       text NOT NULL REFERENCES environments (environment_id),
  idempotency_key      text NOT NULL,
  resource_generation  integer NOT NULL DEFAULT 1,
  data_generation      integer NOT NULL DEFAULT 1,
  state                text NOT NULL CHECK (state IN ('Available', 'Attached')),
  attached_lease       integer,
  revision             bigint NOT NULL DEFAULT 1,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  UNIQUE (environment_id, idempotency_key)
);

-- Network policies per project (embedded registry standing in for Cilium policy readback).
CREATE TABLE network_policies (
  tenant_id    text NOT NULL,
  project_id   text NOT NULL,
  generation   integer NOT NULL CHECK (generation >= 1),
  policy       jsonb NOT NULL,
  policy_hash  text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, project_id, generation)
);

-- Effects that run a provider attempt name it, so the relay publishes by attempt ID and the worker
-- acknowledges every outbox row of an attempt once it left Pending.
ALTER TABLE outbox ADD COLUMN attempt_id text;
CREATE INDEX outbox_by_attempt ON outbox (attempt_id) WHERE attempt_id IS NOT NULL;
