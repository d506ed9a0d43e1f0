-- The storage binding pins the claim's full specification and the bound PersistentVolume's mount
-- options too (actors/workspace-storage.ts): the SHA-256 of the canonical JSON of the PVC's `spec`
-- as first verified, and the PV's `spec.mountOptions` (an empty list when it names none). A claim
-- resized, moved to another class or access mode, or a PV remounted with other options is then
-- refused, at a provision and around a suspend flush's Host delivery, like a replaced PVC.
--
-- Bindings pinned before this migration have neither: the next check whose storage passes every
-- other check records them, once (first writer wins).
ALTER TABLE workspace_storage_bindings
  ADD COLUMN pvc_claim_spec_sha256 text,
  ADD COLUMN pv_mount_options      jsonb;

-- The embedded storage's claim specification and mount options, as a Kubernetes claim and PV hold them.
ALTER TABLE embedded_workspace_storage
  ADD COLUMN pvc_spec         jsonb NOT NULL
    DEFAULT '{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}',
  ADD COLUMN pv_mount_options jsonb NOT NULL DEFAULT '[]';
