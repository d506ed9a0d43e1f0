-- What an operator's list filters on, projected from the snapshot by the writer that commits it
-- (actors/environment-definition.ts `project`), so a page is an index range, never a scan of
-- snapshots: the sandbox region's state, the current lease's expiry, how many attempts keep the
-- Environment from releasing (unresolved provision/release attempts and an open reconciliation),
-- and how many late-resource cleanups are open.
ALTER TABLE environments
  ADD COLUMN sandbox_state       text,
  ADD COLUMN lease_expires_at    timestamptz,
  ADD COLUMN unresolved_attempts integer NOT NULL DEFAULT 0,
  ADD COLUMN open_cleanups       integer NOT NULL DEFAULT 0;

UPDATE environments
   SET sandbox_state = snapshot->'value'->>'sandbox',
       lease_expires_at = (snapshot->'context'->'sandbox'->'lease'->>'expiresAt')::timestamptz,
       unresolved_attempts =
         (SELECT count(*) FROM jsonb_object_keys(coalesce(snapshot->'context'->'sandbox'->'unresolved', '{}')))
         + CASE WHEN snapshot->'context'->'sandbox'->'lease'->>'reconcileAttemptId' IS NULL THEN 0 ELSE 1 END,
       open_cleanups = (SELECT count(*) FROM jsonb_object_keys(coalesce(snapshot->'context'->'cleanups', '{}')));

-- Newest first, in a stable order (created_at never changes; the ID breaks ties): one index range
-- per page, for a project and for a run, and one per filter an operator pages through.
CREATE INDEX environments_list_project
  ON environments (tenant_id, project_id, created_at DESC, environment_id DESC);
CREATE INDEX environments_list_run
  ON environments (tenant_id, project_id, run_id, created_at DESC, environment_id DESC);
CREATE INDEX environments_list_lifecycle
  ON environments (tenant_id, project_id, lifecycle_state, created_at DESC, environment_id DESC);
CREATE INDEX environments_list_sandbox
  ON environments (tenant_id, project_id, sandbox_state, created_at DESC, environment_id DESC);
CREATE INDEX environments_list_unresolved
  ON environments (tenant_id, project_id, created_at DESC, environment_id DESC) WHERE unresolved_attempts > 0;
CREATE INDEX environments_list_cleanups
  ON environments (tenant_id, project_id, created_at DESC, environment_id DESC) WHERE open_cleanups > 0;
