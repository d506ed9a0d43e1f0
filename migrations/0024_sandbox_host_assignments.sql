-- Sandbox-host assignments (docs/sandbox-host.md, "Assignments"): one row per envelope the control
-- plane issued to an enrolled host. Invariants:
-- - per host, sequences are 1, 2, 3, ... without gaps: the primary key forbids a duplicate, and the
--   foreign key from (host_id, previous_sequence) to the row before forbids a gap (sequence 1 has
--   no previous); the issuer allocates max + 1 under the host row's lock;
-- - one envelope per operation id per host, so issuing an operation again serves the stored one;
-- - the envelope (the exact signed wire, canonical) and its binding never change, and a row is
--   never deleted (trigger below), so a restarted control plane re-serves the same bytes;
-- - the host-signed result is written once, Issued -> Reported, after it verified against the
--   host's enrolled result key and this envelope's digest; it never changes afterwards.

CREATE TABLE sandbox_host_assignments (
  host_id             text        NOT NULL REFERENCES sandbox_hosts (host_id),
  sequence            integer     NOT NULL CHECK (sequence >= 1),
  previous_sequence   integer     GENERATED ALWAYS AS (NULLIF(sequence - 1, 0)) STORED,
  operation_id        text        NOT NULL CHECK (length(operation_id) BETWEEN 1 AND 256),
  operation_kind      text        NOT NULL
                                  CHECK (operation_kind IN ('provision', 'describe', 'release', 'listOwned')),
  -- The signed wire { body, signature, keyVersion }, and SHA-256 of its canonical JSON.
  envelope            jsonb       NOT NULL,
  envelope_sha256     text        NOT NULL CHECK (envelope_sha256 ~ '^[0-9a-f]{64}$'),
  environment_id      text        NOT NULL CHECK (length(environment_id) BETWEEN 1 AND 256),
  lease_operation_id  text        NOT NULL CHECK (length(lease_operation_id) BETWEEN 1 AND 256),
  resource_generation integer     NOT NULL CHECK (resource_generation >= 1),
  provider_fence      integer     NOT NULL CHECK (provider_fence >= 1),
  state               text        NOT NULL CHECK (state IN ('Issued', 'Reported')),
  issued_at           timestamptz NOT NULL,
  -- The verified host-signed result wire and SHA-256 of its canonical JSON, once reported.
  result              jsonb,
  result_sha256       text        CHECK (result_sha256 ~ '^[0-9a-f]{64}$'),
  reported_at         timestamptz,
  PRIMARY KEY (host_id, sequence),
  UNIQUE (host_id, operation_id),
  UNIQUE (host_id, envelope_sha256),
  FOREIGN KEY (host_id, previous_sequence) REFERENCES sandbox_host_assignments (host_id, sequence),
  -- The stored wire must say what its columns say.
  CHECK (envelope->'body'->>'hostId' = host_id),
  CHECK ((envelope->'body'->>'sequence')::integer = sequence),
  CHECK (envelope->'body'->'operation'->>'id' = operation_id),
  CHECK ((envelope->'body'->'fence'->>'providerFence')::integer = provider_fence),
  CHECK ((state = 'Reported') = (result IS NOT NULL)),
  CHECK ((state = 'Reported') = (result_sha256 IS NOT NULL)),
  CHECK ((state = 'Reported') = (reported_at IS NOT NULL))
);

-- Assignments are append-only and a result is written once: only Issued -> Reported may change a
-- row, and only its result columns.
CREATE FUNCTION sandbox_host_assignments_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'sandbox host assignments are never deleted';
  END IF;
  IF OLD.state <> 'Issued' OR NEW.state <> 'Reported'
     OR NEW.host_id <> OLD.host_id OR NEW.sequence <> OLD.sequence
     OR NEW.operation_id <> OLD.operation_id OR NEW.operation_kind <> OLD.operation_kind
     OR NEW.envelope <> OLD.envelope OR NEW.envelope_sha256 <> OLD.envelope_sha256
     OR NEW.environment_id <> OLD.environment_id OR NEW.lease_operation_id <> OLD.lease_operation_id
     OR NEW.resource_generation <> OLD.resource_generation OR NEW.provider_fence <> OLD.provider_fence
     OR NEW.issued_at <> OLD.issued_at THEN
    RAISE EXCEPTION 'a sandbox host assignment changes only once, from Issued to Reported';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER sandbox_host_assignments_guard
  BEFORE UPDATE OR DELETE ON sandbox_host_assignments
  FOR EACH ROW EXECUTE FUNCTION sandbox_host_assignments_guard();

-- What a host has not reported yet, for the poll that re-serves it.
CREATE INDEX sandbox_host_assignments_issued
  ON sandbox_host_assignments (host_id, sequence) WHERE state = 'Issued';
