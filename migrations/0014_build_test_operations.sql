-- BuildTest operations (docs/build-test.md): one row per accepted command run on a lease, keyed by
-- Core's stable operation ID. The intent (checkpoint, accepted command, its hash, the request
-- fingerprint, the expected binding and the profile the lease accepted) is written once, in the
-- transition that reserves the operation, before any provider effect; results are written by the
-- transitions that settle its steps. A terminal row keeps its status, Pod references and evidence:
-- only updated_at and one verified acknowledgment may change after that (the repository's UPDATEs
-- say so in their WHERE clauses). Seed and package bytes are never stored here.
CREATE TABLE build_test_operations (
  environment_id        text NOT NULL REFERENCES environments (environment_id),
  operation_id          text NOT NULL,
  checkpoint            jsonb NOT NULL,
  accepted_command      jsonb NOT NULL,
  accepted_command_hash text NOT NULL,
  request_fingerprint   text NOT NULL,
  expected_binding      jsonb NOT NULL,
  profile_hash          text NOT NULL,
  lease_operation_id    text NOT NULL,
  state                 text NOT NULL
    CHECK (state IN ('Running', 'ReconciliationRequired', 'Succeeded', 'Failed', 'Interrupted')),
  step                  text CHECK (step IN ('command', 'collect', 'cleanup')),
  command_pod           jsonb,
  collector_pod         jsonb,
  preparation           jsonb,
  exit_code             integer,
  command_log           jsonb,
  collector_receipt     jsonb,
  capture               jsonb,
  error                 jsonb,
  acknowledgment        jsonb,
  acknowledged_at       timestamptz(6),
  cleaned_at            timestamptz(6),
  created_at            timestamptz(6) NOT NULL DEFAULT date_trunc('microseconds', clock_timestamp()),
  updated_at            timestamptz(6) NOT NULL DEFAULT date_trunc('microseconds', clock_timestamp()),
  PRIMARY KEY (environment_id, operation_id),
  -- Core's operation ID is unique to one checkpoint, so to one Environment.
  UNIQUE (operation_id)
);

-- The reconciler's scan for operations with a step left to do (store/build-test-operations.ts).
CREATE INDEX build_test_operations_open ON build_test_operations (updated_at)
  WHERE step IS NOT NULL AND cleaned_at IS NULL;

-- A BuildTest step is a provider call like any other: it has its attempt, written before the call.
ALTER TABLE provider_attempts DROP CONSTRAINT provider_attempts_kind_check;
ALTER TABLE provider_attempts ADD CONSTRAINT provider_attempts_kind_check
  CHECK (kind IN ('provision', 'describe', 'listOwned', 'release', 'renew', 'cleanup', 'sweep', 'buildTest'));
