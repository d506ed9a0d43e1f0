-- Sandbox-host assignments gain a fifth operation kind, `renew` (docs/sandbox-host.md,
-- "Assignments"): a lease's new expiry, sent to the host that holds it. Only the kind check widens;
-- every stored row already satisfies the new one. Renew is a mutating kind, so its fence counts
-- towards the Environment's high-water mark like provision and release (the issuer's query decides
-- which kinds count; this table only records the kind).
ALTER TABLE sandbox_host_assignments
  DROP CONSTRAINT sandbox_host_assignments_operation_kind_check;

ALTER TABLE sandbox_host_assignments
  ADD CONSTRAINT sandbox_host_assignments_operation_kind_check
  CHECK (operation_kind IN ('provision', 'renew', 'describe', 'release', 'listOwned'));
