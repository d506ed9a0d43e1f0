-- Sandbox-host enrollment and persisted verification trust (docs/sandbox-host.md, "Enrollment and
-- trust"). Enrollment evidence is transient: only its SHA-256 digest and the verifier's safe outcome
-- are stored, so a refused digest is refused again without asking the verifier, and no row holds the
-- evidence itself. A host authenticates with the exact fingerprint of one of its certificate
-- generations; rotation adds a Next generation beside the Current one, promotion keeps the old one
-- (Previous) valid until it is revoked, and revocation is per generation. The control plane's own
-- verification trust keeps every key it ever trusted, with its role, so a restart cannot bring a
-- retired version back.

CREATE TABLE sandbox_hosts (
  host_id            text        PRIMARY KEY CHECK (length(host_id) BETWEEN 1 AND 256),
  state              text        NOT NULL CHECK (state IN ('Enrolled', 'Retired')),
  -- The enrollment decision that admitted the host.
  evidence_sha256    text        NOT NULL UNIQUE CHECK (evidence_sha256 ~ '^[0-9a-f]{64}$'),
  enrolled_at        timestamptz NOT NULL,
  retired_at         timestamptz,
  CHECK ((state = 'Retired') = (retired_at IS NOT NULL))
);

-- The public keys a host signs its results with; a version is never reused or changed.
CREATE TABLE sandbox_host_result_keys (
  host_id            text        NOT NULL REFERENCES sandbox_hosts (host_id),
  key_version        integer     NOT NULL CHECK (key_version >= 1),
  public_key_pem     text        NOT NULL CHECK (public_key_pem LIKE '-----BEGIN PUBLIC KEY-----%'),
  added_at           timestamptz NOT NULL,
  PRIMARY KEY (host_id, key_version)
);

CREATE TABLE sandbox_host_certificates (
  host_id            text        NOT NULL REFERENCES sandbox_hosts (host_id),
  generation         integer     NOT NULL CHECK (generation >= 1),
  -- SHA-256 of the DER certificate, lower-case hex: what the listener matches a peer against.
  fingerprint_sha256 text        NOT NULL UNIQUE CHECK (fingerprint_sha256 ~ '^[0-9a-f]{64}$'),
  -- Previous: superseded by a promotion, still authenticating until it is revoked.
  state              text        NOT NULL CHECK (state IN ('Current', 'Next', 'Previous', 'Revoked')),
  not_before         timestamptz NOT NULL,
  not_after          timestamptz NOT NULL,
  added_at           timestamptz NOT NULL,
  revoked_at         timestamptz,
  PRIMARY KEY (host_id, generation),
  CHECK (not_before < not_after),
  CHECK ((state = 'Revoked') = (revoked_at IS NOT NULL))
);

-- At most one Current and one Next generation per host.
CREATE UNIQUE INDEX sandbox_host_certificates_one_current
  ON sandbox_host_certificates (host_id) WHERE state = 'Current';
CREATE UNIQUE INDEX sandbox_host_certificates_one_next
  ON sandbox_host_certificates (host_id) WHERE state = 'Next';

-- One decision per distinct evidence, written once. Never the evidence itself.
CREATE TABLE sandbox_host_enrollment_decisions (
  evidence_sha256    text        PRIMARY KEY CHECK (evidence_sha256 ~ '^[0-9a-f]{64}$'),
  outcome            text        NOT NULL CHECK (outcome IN ('Accepted', 'Refused')),
  -- A refusal's stable code; null for an acceptance.
  reason_code        text        CHECK (reason_code ~ '^[a-z0-9]+(-[a-z0-9]+)*$'),
  verifier_profile   text        NOT NULL CHECK (length(verifier_profile) BETWEEN 1 AND 128),
  host_id            text        CHECK (length(host_id) BETWEEN 1 AND 256),
  decided_at         timestamptz NOT NULL,
  CHECK ((outcome = 'Refused') = (reason_code IS NOT NULL)),
  CHECK ((outcome = 'Accepted') = (host_id IS NOT NULL))
);

-- The control plane's verification trust: one row (id = 1) with the revocation epoch and a revision
-- that every replacement compares and sets, plus every key version ever trusted.
CREATE TABLE control_verification_trust (
  id                 integer     PRIMARY KEY CHECK (id = 1),
  revocation_epoch   integer     NOT NULL CHECK (revocation_epoch >= 1),
  revision           integer     NOT NULL CHECK (revision >= 1),
  updated_at         timestamptz NOT NULL
);

CREATE TABLE control_verification_keys (
  key_version        integer     PRIMARY KEY CHECK (key_version >= 1),
  -- SubjectPublicKeyInfo PEM of the Ed25519 public key; never private material.
  public_key_pem     text        NOT NULL CHECK (public_key_pem LIKE '-----BEGIN PUBLIC KEY-----%'),
  not_before         timestamptz NOT NULL,
  not_after          timestamptz NOT NULL,
  role               text        NOT NULL CHECK (role IN ('current', 'next', 'retired')),
  added_at           timestamptz NOT NULL,
  -- When a replacement dropped the key; a retired key never changes role again.
  retired_at         timestamptz,
  CHECK (not_before < not_after),
  CHECK ((role = 'retired') = (retired_at IS NOT NULL))
);

CREATE UNIQUE INDEX control_verification_keys_one_current
  ON control_verification_keys (role) WHERE role = 'current';
CREATE UNIQUE INDEX control_verification_keys_one_next
  ON control_verification_keys (role) WHERE role = 'next';
