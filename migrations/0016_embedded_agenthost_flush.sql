-- Embedded stand-in for the AgentHost's Workspace flush (actors/agenthost-embedded.ts), used where no
-- real Host is reachable: embedded mode, the demo, the AgentHost contract suite. Production reads
-- none of it. One row per flush operation, written once: a replay answers the saved receipt, and a
-- different request under the same operation ID is a conflict. The Host's data generation for a
-- lease is the highest next_data_generation recorded for it (else the lease's own).
CREATE TABLE embedded_agenthost_flushes (
  flush_operation_id       text    PRIMARY KEY,
  lease_operation_id       text    NOT NULL,
  workspace_volume_id      text    NOT NULL,
  transition_revision      bigint  NOT NULL CHECK (transition_revision >= 1),
  data_generation          integer NOT NULL CHECK (data_generation >= 0),
  next_data_generation     integer NOT NULL CHECK (next_data_generation = data_generation + 1),
  tree_hash                text    NOT NULL CHECK (tree_hash ~ '^[0-9a-f]{64}$'),
  -- The request as asked (binding and flush identity) and the receipt as answered.
  request                  jsonb   NOT NULL,
  receipt                  jsonb   NOT NULL,
  created_at               timestamptz NOT NULL DEFAULT now(),
  -- One flush per volume generation: two operations cannot both advance the same generation.
  UNIQUE (workspace_volume_id, next_data_generation)
);

CREATE INDEX embedded_agenthost_flushes_lease ON embedded_agenthost_flushes (lease_operation_id);
