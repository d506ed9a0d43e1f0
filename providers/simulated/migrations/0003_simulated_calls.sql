-- The simulated provider's call log: one row per provider call, written as the call begins (before
-- any fault or effect), so `sandlot audit` can check that every call had a durable attempt written
-- before it. The provider sees no attempt ID, only the owner binding the call carries: the operation
-- (absent on a listOwned by owner hash and fence alone), the owner hash and the provider fence.
-- called_at is clock_timestamp(), the moment of the insert, not the start of a transaction.
CREATE TABLE IF NOT EXISTS simulated_provider_calls (
  call_id        bigserial PRIMARY KEY,
  operation      text NOT NULL,
  operation_id   text,
  owner_hash     text,
  provider_fence bigint,
  called_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
