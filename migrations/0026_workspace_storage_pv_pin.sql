-- The Workspace record's storage binding pins the bound PersistentVolume too (actors/workspace-storage.ts):
-- its name and UID, and the claimRef it carried (namespace, name, UID of the pinned PVC). A PV deleted
-- and made again under its name, or another PV bound to the claim in its place, is then refused like
-- a replaced PVC.
--
-- Bindings pinned before this migration have no PV: all five columns are null. The next provision
-- whose storage passes every check records the PV it verified, once (first writer wins), and every
-- later one is compared with it.
ALTER TABLE workspace_storage_bindings
  ADD COLUMN pv_name            text,
  ADD COLUMN pv_uid             text,
  ADD COLUMN pv_claim_namespace text,
  ADD COLUMN pv_claim_name      text,
  ADD COLUMN pv_claim_uid       text;

ALTER TABLE workspace_storage_bindings
  ADD CONSTRAINT workspace_storage_bindings_pv_pinned_whole
  CHECK (num_nulls(pv_name, pv_uid, pv_claim_namespace, pv_claim_name, pv_claim_uid) IN (0, 5));
