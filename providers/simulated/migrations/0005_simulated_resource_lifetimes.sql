-- When each simulated resource existed, on PostgreSQL's clock: created_at is the moment of its
-- insert, deleted_at the moment of the release that deleted it (clock_timestamp(), not the start of
-- a transaction). The chaos verdict compares these with the Environment journal's recorded_at, so
-- both sides use the database server's clock rather than the clock of whichever process made the
-- call (created_at_ms and deleted_at_ms stay: resources age by the provider's injected clock).
-- Rows written before this file keep NULL in both (their moments are unknown on this clock).
ALTER TABLE simulated_resources ADD COLUMN IF NOT EXISTS created_at timestamptz;
ALTER TABLE simulated_resources ALTER COLUMN created_at SET DEFAULT clock_timestamp();
ALTER TABLE simulated_resources ADD COLUMN IF NOT EXISTS deleted_at timestamptz;
