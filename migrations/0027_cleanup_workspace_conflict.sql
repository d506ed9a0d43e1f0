-- A late resource whose Workspace volume is held by another lease when its cleanup is recorded is a
-- conflict (two sandboxes may mount one Workspace): the cleanup row keeps it, as
-- {"volumeId", "heldByLease", "state", "detectedAt"}, so the read route, the inspection and
-- `sandlot audit` can name it, and the reconciler claims such rows first. Null: no conflict.
-- Kept after the release as history; only open rows (Pending, Claimed) are a live conflict.
ALTER TABLE late_resource_cleanups ADD COLUMN workspace_conflict jsonb;
