-- Lease renewal: a renew attempt moves the provider's term (Agent Sandbox: the claim's shutdown
-- time) before the lease's expiry moves. It is a provider call like any other, written before it.
ALTER TABLE provider_attempts DROP CONSTRAINT provider_attempts_kind_check;
ALTER TABLE provider_attempts ADD CONSTRAINT provider_attempts_kind_check
  CHECK (kind IN ('provision', 'describe', 'listOwned', 'release', 'renew', 'cleanup', 'sweep'));
