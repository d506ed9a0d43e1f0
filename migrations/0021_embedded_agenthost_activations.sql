-- Embedded stand-in for the AgentHost's resume activation (actors/agenthost-embedded-activation.ts),
-- used where no real Host is reachable: embedded mode, the demo, the AgentHost contract suites.
-- Production reads none of it. One row per server-issued resume attempt, its request (without the
-- configuration bytes, whose SHA-256 it keeps) and receipt written once: a redelivery answers the
-- saved receipt, and another request under the same attempt ID is a conflict. session_lost_at is
-- the Host's memory of the session, not of the attempt: a test sets it to stand for a restarted
-- Host that forgot its sessions, after which the lease's session reads Missing and a new attempt
-- may activate.
CREATE TABLE embedded_agenthost_activations (
  attempt_id               text    PRIMARY KEY,
  lease_operation_id       text    NOT NULL,
  resume_operation_id      text    NOT NULL,
  attempt_seq              integer NOT NULL CHECK (attempt_seq >= 1),
  registration_id          text    NOT NULL,
  configuration_sha256     text    NOT NULL CHECK (configuration_sha256 ~ '^[0-9a-f]{64}$'),
  -- The request as asked (binding, attempt, registration, configuration SHA-256) and the receipt.
  request                  jsonb   NOT NULL,
  receipt                  jsonb   NOT NULL,
  session_lost_at          timestamptz,
  created_at               timestamptz NOT NULL DEFAULT now()
);

-- One Active session per Host (per lease): a second attempt cannot activate beside it.
CREATE UNIQUE INDEX embedded_agenthost_activations_active
  ON embedded_agenthost_activations (lease_operation_id) WHERE session_lost_at IS NULL;
