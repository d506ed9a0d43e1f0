-- Workspace storage, checked before a lease is reserved (actors/workspace-storage.ts).
--
-- workspace_storage_bindings is the Workspace record's storage binding: the storage selection and
-- the exact PVC (namespace, name, UID) a volume was first admitted on. It is pinned once, by the
-- first provision whose storage evidence passed every check, and never changed: a later provision
-- that finds another PVC UID or another selection is refused.
--
-- embedded_workspace_storage is the embedded storage itself (store/workspace-storage.ts): the
-- simulated PVC/PV pair the embedded Workspace owner records when it creates a volume, standing in
-- for what a Kubernetes deployment reads back from the API server. No row: storage holds nothing.
CREATE TABLE workspace_storage_bindings (
  volume_id                text PRIMARY KEY REFERENCES workspace_volumes (volume_id),
  storage_provider_id      text NOT NULL,
  storage_options_revision text NOT NULL,
  pvc_namespace            text NOT NULL,
  pvc_name                 text NOT NULL,
  pvc_uid                  text NOT NULL,
  pinned_at                timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE embedded_workspace_storage (
  volume_id                text PRIMARY KEY REFERENCES workspace_volumes (volume_id),
  -- The selection the claim was made under (null: it names none).
  storage_provider_id      text,
  storage_options_revision text,
  pvc_namespace            text NOT NULL,
  pvc_name                 text NOT NULL,
  pvc_uid                  text NOT NULL,
  -- The PVC's owner-generation annotations, as text the way Kubernetes annotations are.
  pvc_environment_id       text,
  pvc_resource_generation  text,
  pvc_data_generation      text,
  pvc_phase                text,
  pvc_volume_name          text,
  pvc_deleting             boolean NOT NULL DEFAULT false,
  -- The PersistentVolume the claim is bound to (null name: none exists).
  pv_name                  text,
  pv_uid                   text,
  pv_claim_namespace       text,
  pv_claim_name            text,
  pv_claim_uid             text,
  updated_at               timestamptz NOT NULL DEFAULT now()
);

-- Volumes created before this migration get their storage now, exactly as a new volume does.
INSERT INTO embedded_workspace_storage (
  volume_id, storage_provider_id, storage_options_revision, pvc_namespace, pvc_name, pvc_uid,
  pvc_environment_id, pvc_resource_generation, pvc_data_generation, pvc_phase, pvc_volume_name,
  pv_name, pv_uid, pv_claim_namespace, pv_claim_name)
SELECT volume_id, 'embedded', '1', 'embedded', replace(volume_id, '_', '-'), gen_random_uuid()::text,
       environment_id, resource_generation::text, data_generation::text, 'Bound',
       'pv-' || replace(volume_id, '_', '-'),
       'pv-' || replace(volume_id, '_', '-'), gen_random_uuid()::text, 'embedded', replace(volume_id, '_', '-')
  FROM workspace_volumes;

UPDATE embedded_workspace_storage SET pv_claim_uid = pvc_uid;
