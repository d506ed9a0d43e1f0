-- The simulated resource's term: when its lease expires (epoch milliseconds), or NULL for a lease
-- that never expires. Set at provision from the request's expiresAt and moved by renew. Like a
-- cluster-side shutdown time, it is only recorded: the simulated provider never releases a resource
-- because its term passed. Rows written before this column existed keep NULL (no term).
ALTER TABLE simulated_resources ADD COLUMN IF NOT EXISTS expires_at_ms bigint;
