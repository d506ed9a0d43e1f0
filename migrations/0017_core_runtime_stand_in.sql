-- Embedded stand-in for Core's suspend/resume side (actors/runtime-core/runtime-core-embedded.ts),
-- used where no Core service is configured: embedded mode, the demo, the RuntimeCore contract
-- suite. Production reads none of these tables. Rows are written by the embedded admin routes
-- (http/routes/admin-runtime-core.ts). An operation's terms and its saved evidence are written
-- once; only its state moves, forward along Reserved → Fenced → Committed → Completed, or from a
-- current state to Abandoned, each move a compare-and-set on state_revision. Registrations are
-- never updated: a new Runtime is a new row at the next generation.

CREATE TABLE core_runtime_operations (
  operation_id          text     NOT NULL PRIMARY KEY,
  tenant_id             text     NOT NULL,
  project_id            text     NOT NULL,
  run_id                text     NOT NULL,
  step_id               text     NOT NULL,
  environment_id        text     NOT NULL,
  kind                  text     NOT NULL CHECK (kind IN ('suspend', 'resume')),
  -- The terms fixed at reservation (runtimeOperationTermsSchema), canonical, and their SHA-256.
  terms                 jsonb    NOT NULL,
  terms_hash            text     NOT NULL CHECK (terms_hash ~ '^[0-9a-f]{64}$'),
  state                 text     NOT NULL DEFAULT 'reserved'
                        CHECK (state IN ('reserved', 'fenced', 'committed', 'completed', 'abandoned')),
  state_revision        integer  NOT NULL DEFAULT 1 CHECK (state_revision >= 1),
  saved_evidence        jsonb,
  saved_evidence_hash   text     CHECK (saved_evidence_hash ~ '^[0-9a-f]{64}$'),
  created_by            text     NOT NULL,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  CHECK ((saved_evidence IS NULL) = (saved_evidence_hash IS NULL)),
  -- Core commits a manifest only over saved evidence.
  CHECK (state NOT IN ('committed', 'completed') OR saved_evidence IS NOT NULL)
);

-- At most one current operation per Environment run step.
CREATE UNIQUE INDEX core_runtime_operations_current
  ON core_runtime_operations (tenant_id, project_id, run_id, step_id, environment_id)
  WHERE state IN ('reserved', 'fenced', 'committed');

-- Runtime registrations; the current one is the highest generation of its Environment run step.
CREATE TABLE core_runtime_registrations (
  registration_id  text    NOT NULL PRIMARY KEY,
  tenant_id        text    NOT NULL,
  project_id       text    NOT NULL,
  run_id           text    NOT NULL,
  step_id          text    NOT NULL,
  environment_id   text    NOT NULL,
  profile_id       text    NOT NULL,
  session_id       text    NOT NULL,
  generation       integer NOT NULL CHECK (generation >= 1),
  created_by       text    NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, project_id, run_id, step_id, environment_id, generation)
);
