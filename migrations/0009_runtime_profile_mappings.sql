-- Runtime profile mappings (actors/runtime-profiles.ts): one immutable row per resolved profile,
-- bound to the exact placement and AgentHost endpoint it was verified on. The profile ID is derived
-- from the source profile ID, the actor, the accepted selection hash and the observed placement, so
-- the same placement resolves the same row and a new Pod or Service resolves a new one. Rows are
-- inserted once (ON CONFLICT DO NOTHING) and never updated: a differing resolve is refused, and a
-- later read compares every pinned column with what is current. No column holds a credential.
CREATE TABLE runtime_profile_mappings (
  profile_id                 text PRIMARY KEY,
  environment_id             text NOT NULL REFERENCES environments (environment_id),
  tenant_id                  text NOT NULL,
  project_id                 text NOT NULL,
  run_id                     text NOT NULL,
  source_profile_id          text NOT NULL,
  -- The authenticated subject that resolved it; only it may read the mapping.
  actor                      text NOT NULL,
  -- The run selection the Environment accepted (its pinned hash).
  selection_hash             text NOT NULL,
  -- SHA-256 of the source profile and receiver configuration the copy was made from.
  source_config_hash         text NOT NULL,
  -- The placement the endpoint was observed in.
  resource_id                text NOT NULL,
  operation_id               text NOT NULL,
  resource_generation        integer NOT NULL CHECK (resource_generation >= 1),
  provider_fence             integer NOT NULL CHECK (provider_fence >= 1),
  lifecycle_generation       integer NOT NULL,
  pod_uid                    text NOT NULL,
  pod_ip                     text NOT NULL,
  server_name                text NOT NULL,
  port                       integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
  -- The receiver's HTTPS endpoint, configure URL and audience the copy names.
  endpoint                   text NOT NULL,
  configure_url              text NOT NULL,
  audience                   text NOT NULL,
  -- The exact copied replacement profile, and the SHA-256 of its canonical JSON.
  profile                    jsonb NOT NULL,
  profile_hash               text NOT NULL,
  created_at                 timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX runtime_profile_mappings_environment ON runtime_profile_mappings (environment_id);
