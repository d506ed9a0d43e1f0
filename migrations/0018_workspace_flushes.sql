-- Trusted Workspace flushes (the Environment machine's workspace region; docs/suspend-resume.md).
-- One row per flush operation, inserted by the transition that reserves it, before the Host is
-- asked. Its terms never change. Only a Verified flush carries a receipt: it is written once, by the
-- same transition that advances the volume's data generation by one, and no later write replaces
-- it. An uncertain delivery keeps its evidence in `evidence` and the flush stays open.
CREATE TABLE workspace_flushes (
  flush_operation_id   text    PRIMARY KEY,
  environment_id       text    NOT NULL REFERENCES environments (environment_id),
  volume_id            text    NOT NULL REFERENCES workspace_volumes (volume_id),
  core_operation_id    text    NOT NULL,
  step_id              text    NOT NULL,
  lease_operation_id   text    NOT NULL,
  resource_generation  integer NOT NULL,
  provider_fence       integer NOT NULL,
  transition_revision  bigint  NOT NULL CHECK (transition_revision >= 1),
  data_generation      integer NOT NULL CHECK (data_generation >= 0),
  state                text    NOT NULL CHECK (state IN ('Reserved', 'Uncertain', 'Verified', 'Refused')),
  deliveries           integer NOT NULL CHECK (deliveries >= 1),
  -- The last delivery's evidence (uncertain or refused), kept for reconciliation.
  evidence             jsonb,
  receipt              jsonb,
  receipt_sha256       text    CHECK (receipt_sha256 ~ '^[0-9a-f]{64}$'),
  reserved_at          timestamptz NOT NULL DEFAULT now(),
  settled_at           timestamptz,
  CHECK ((state = 'Verified') = (receipt IS NOT NULL AND receipt_sha256 IS NOT NULL)),
  -- One flush per exact volume transition.
  UNIQUE (volume_id, transition_revision)
);

CREATE INDEX workspace_flushes_by_environment ON workspace_flushes (environment_id, reserved_at);
