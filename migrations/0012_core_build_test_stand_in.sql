-- Embedded stand-in for Core's BuildTest side (actors/build-test/core-embedded.ts), used where no
-- Core service is configured: embedded mode, the demo, the Core port contract suite. Production reads
-- none of these tables. Rows are written by the embedded admin routes (http/routes/admin-core.ts)
-- and never updated: an identical write is a no-op, a different one a conflict.

-- Version 2 seeds (credential-free Git bundles), by content. Bounded like Core's seed field.
CREATE TABLE core_workspace_seeds (
  tenant_id    text    NOT NULL,
  project_id   text    NOT NULL,
  seed_sha256  text    NOT NULL CHECK (seed_sha256 ~ '^[0-9a-f]{64}$'),
  seed_length  integer NOT NULL CHECK (seed_length BETWEEN 1 AND 67188876),
  seed         bytea   NOT NULL CHECK (octet_length(seed) = seed_length),
  created_by   text    NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, project_id, seed_sha256)
);

-- Accepted commands, one per checkpoint, each with its stable operation ID. `command` is the
-- canonical accepted command as Core answers it; a version 2 command names a seed that exists.
CREATE TABLE core_accepted_commands (
  tenant_id      text     NOT NULL,
  project_id     text     NOT NULL,
  run_id         text     NOT NULL,
  step_id        text     NOT NULL,
  checkpoint_id  text     NOT NULL,
  operation_id   text     NOT NULL UNIQUE,
  version        smallint NOT NULL CHECK (version IN (1, 2)),
  command        jsonb    NOT NULL,
  command_hash   text     NOT NULL CHECK (command_hash ~ '^[0-9a-f]{64}$'),
  seed_sha256    text,
  seed_length    integer,
  created_by     text     NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, project_id, run_id, step_id, checkpoint_id),
  FOREIGN KEY (tenant_id, project_id, seed_sha256) REFERENCES core_workspace_seeds (tenant_id, project_id, seed_sha256),
  CHECK ((version = 2) = (seed_sha256 IS NOT NULL)),
  CHECK ((seed_sha256 IS NULL) = (seed_length IS NULL))
);

-- What Events admitted for an operation's capture: the one acknowledgment Core vouches for.
CREATE TABLE core_journal_admissions (
  operation_id        text NOT NULL PRIMARY KEY REFERENCES core_accepted_commands (operation_id),
  acknowledgment      jsonb NOT NULL,
  acknowledgment_hash text NOT NULL CHECK (acknowledgment_hash ~ '^[0-9a-f]{64}$'),
  created_by          text NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now()
);
