-- Environment actors: one row per (tenant, project, run, idempotency key). The snapshot is the
-- XState persisted snapshot; lifecycle_state and lifecycle_generation are projections of it kept
-- in columns so reads and fences need no restore.
CREATE TABLE environments (
  environment_id       text PRIMARY KEY,
  tenant_id            text NOT NULL,
  project_id           text NOT NULL,
  run_id               text NOT NULL,
  idempotency_key      text NOT NULL,
  run_selection_hash   text NOT NULL,
  machine_version      integer NOT NULL,
  snapshot             jsonb NOT NULL,
  revision             bigint NOT NULL CHECK (revision >= 1),
  lifecycle_state      text NOT NULL,
  lifecycle_generation integer NOT NULL CHECK (lifecycle_generation >= 1),
  quarantined_at       timestamptz,
  quarantine_reason    text,
  created_by           text NOT NULL,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, project_id, run_id, idempotency_key)
);

-- One row per accepted transition; revision is the snapshot revision the transition produced.
CREATE TABLE environment_journal (
  environment_id text NOT NULL REFERENCES environments (environment_id),
  revision       bigint NOT NULL,
  event_type     text NOT NULL,
  event          jsonb NOT NULL,
  from_state     jsonb,
  to_state       jsonb NOT NULL,
  actor          text NOT NULL,
  recorded_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment_id, revision)
);

-- One row per effect a transition declared, written in the transition's transaction.
CREATE TABLE outbox (
  outbox_id       bigserial PRIMARY KEY,
  environment_id  text NOT NULL REFERENCES environments (environment_id),
  revision        bigint NOT NULL,
  kind            text NOT NULL,
  payload         jsonb NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  published_at    timestamptz,
  acknowledged_at timestamptz
);
CREATE INDEX outbox_unacknowledged ON outbox (outbox_id) WHERE acknowledged_at IS NULL;

-- Embedded Projects authority: what a subject may do in a tenant's project.
CREATE TABLE project_grants (
  tenant_id   text NOT NULL,
  project_id  text NOT NULL,
  subject     text NOT NULL,
  permissions text[] NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, project_id, subject)
);

-- Embedded run selection: the immutable provider candidates of a run.
CREATE TABLE run_selections (
  tenant_id      text NOT NULL,
  project_id     text NOT NULL,
  run_id         text NOT NULL,
  candidates     jsonb NOT NULL,
  selection_hash text NOT NULL,
  created_by     text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, project_id, run_id)
);
