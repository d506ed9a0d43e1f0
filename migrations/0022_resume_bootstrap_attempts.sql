-- Resume bootstrap attempts (docs/suspend-resume.md "Bootstrap"). One row per server-issued
-- attempt to start the resumed Runtime on the new Host, inserted under the Environment's owner lock
-- before the Host is asked. Its request (registration, configuration digest, Host binding, attempt
-- identities) never changes. Attempts of one resume operation are numbered from 1 and a new one is
-- issued only after the previous one ended in an explicit state loss. A delivery is counted before
-- it runs; an uncertain one keeps its evidence and the attempt stays Delivering (unresolved: it
-- blocks the lifecycle advance). Activated carries the Host's receipt, written once; StateLost keeps
-- that receipt and adds the fresh Host observation that proved the loss.
CREATE TABLE resume_bootstrap_attempts (
  attempt_id              text    PRIMARY KEY,
  environment_id          text    NOT NULL REFERENCES environments (environment_id),
  resume_operation_id     text    NOT NULL,
  attempt_seq             integer NOT NULL CHECK (attempt_seq >= 1),
  registration_id         text    NOT NULL,
  registration_generation integer NOT NULL CHECK (registration_generation >= 1),
  lease_operation_id      text    NOT NULL,
  request                 jsonb   NOT NULL,
  request_sha256          text    NOT NULL CHECK (request_sha256 ~ '^[0-9a-f]{64}$'),
  state                   text    NOT NULL CHECK (state IN ('Delivering', 'Activated', 'Refused', 'StateLost')),
  deliveries              integer NOT NULL CHECK (deliveries >= 0),
  evidence                jsonb,
  receipt                 jsonb,
  receipt_sha256          text    CHECK (receipt_sha256 ~ '^[0-9a-f]{64}$'),
  loss                    jsonb,
  reserved_at             timestamptz NOT NULL DEFAULT now(),
  settled_at              timestamptz,
  CHECK ((state IN ('Activated', 'StateLost')) = (receipt IS NOT NULL AND receipt_sha256 IS NOT NULL)),
  CHECK ((state = 'StateLost') = (loss IS NOT NULL)),
  UNIQUE (resume_operation_id, attempt_seq),
  UNIQUE (resume_operation_id, registration_id)
);

CREATE INDEX resume_bootstrap_attempts_open ON resume_bootstrap_attempts (environment_id)
  WHERE state = 'Delivering';
