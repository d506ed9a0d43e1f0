-- The observer's change feed names resources by the provider's resource ID; this finds the Active
-- lease holding one without reading every Active lease.
CREATE INDEX sandbox_leases_active_resource ON sandbox_leases ((resource->>'resourceId'))
  WHERE state = 'Active';
