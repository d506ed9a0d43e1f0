-- The simulated BuildTest runner's stand-in for command and collector Pods. One row per operation
-- and role: the primary key is what makes a repeated start answer the Pod it started, from any
-- process and after a restart. Rows are only soft-deleted (deleted_at_ms), so an operation's Pod is
-- never started twice.
--
-- binding: the BuildTestBinding with the lease's resource ID and owner hash, compared on every call.
-- run: what the Pod needs to finish after a restart (the command's plan snapshot and log bound, or
-- the collector's version, declared outputs and source), written once at creation.
-- sealed_document: the collector's private state, the sealed version 2 document; written in the same
-- UPDATE as its reference and the receipt, and never overwritten.
CREATE TABLE IF NOT EXISTS simulated_build_test_pods (
  operation_id     text NOT NULL,
  role             text NOT NULL CHECK (role IN ('command', 'collector')),
  pod_name         text NOT NULL,
  pod_uid          text NOT NULL UNIQUE,
  binding          jsonb NOT NULL,
  work_dir         text NOT NULL,
  run              jsonb NOT NULL,
  state            text NOT NULL
    CHECK (state IN ('preparing', 'running', 'exited', 'interrupted', 'failed', 'sealed')),
  exit_code        integer,
  log              jsonb,
  preparation      jsonb,
  receipt          jsonb,
  sealed_document  bytea,
  sealed_sha256    text,
  sealed_length    bigint,
  reason           text,
  message          text,
  created_at_ms    bigint NOT NULL,
  -- When a running command's plan ends (epoch ms); set once preparation succeeded.
  finish_due_ms    bigint,
  finished_at_ms   bigint,
  deleted_at_ms    bigint,
  PRIMARY KEY (operation_id, role),
  CHECK ((sealed_document IS NULL) = (sealed_sha256 IS NULL)),
  CHECK ((sealed_document IS NULL) = (sealed_length IS NULL))
);
