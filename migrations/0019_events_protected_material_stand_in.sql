-- Embedded stand-in for Events' protected material (actors/runtime-events/runtime-events-embedded.ts),
-- used where no Events service is configured: embedded mode, the demo, the RuntimeEvents contract
-- suite. Production reads none of it. Rows are written by the embedded admin route
-- (http/routes/admin-runtime-events.ts) and never updated or deleted: a material is immutable once
-- written (an identical write is a no-op, different bytes under the same key a conflict). Its bytes
-- are answered only with a current Runtime registration of the same session
-- (core_runtime_registrations, migration 0017).

CREATE TABLE events_protected_material (
  tenant_id         text    NOT NULL,
  project_id        text    NOT NULL,
  run_id            text    NOT NULL,
  step_id           text    NOT NULL,
  environment_id    text    NOT NULL,
  session_id        text    NOT NULL,
  event_id          text    NOT NULL,
  object_reference  text    NOT NULL,
  sha256            text    NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  -- Bounded like MAX_PROTECTED_MATERIAL_BYTES (actors/runtime-events/material.ts).
  length            integer NOT NULL CHECK (length BETWEEN 1 AND 262144),
  bytes             bytea   NOT NULL CHECK (octet_length(bytes) = length),
  created_by        text    NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, project_id, run_id, step_id, environment_id, session_id, event_id, object_reference)
);
