// The core PersistentVolume rules the fake enforces on create and write (a subset of the API server's
// ValidatePersistentVolume): capacity holds exactly `storage`, at least one known access mode,
// exactly one volume source, a known reclaim policy and volume mode when set, and a claimRef whose
// fields are strings. Binding is not modelled: whoever plants a PV sets its claimRef.
import { cause, type StatusCause } from './errors.ts';
import { isObject, type JsonObject } from './types.ts';

const ACCESS_MODES = new Set(['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod']);
const RECLAIM_POLICIES = new Set(['Retain', 'Delete', 'Recycle']);
const VOLUME_MODES = new Set(['Filesystem', 'Block']);
const SOURCES = [
  'awsElasticBlockStore',
  'azureDisk',
  'azureFile',
  'cephfs',
  'cinder',
  'csi',
  'fc',
  'flexVolume',
  'gcePersistentDisk',
  'glusterfs',
  'hostPath',
  'iscsi',
  'local',
  'nfs',
  'portworxVolume',
  'rbd',
  'vsphereVolume',
];

export function validatePersistentVolume(object: JsonObject): StatusCause[] {
  const spec = isObject(object['spec']) ? object['spec'] : {};
  const causes: StatusCause[] = [];
  const capacity = spec['capacity'];
  if (!isObject(capacity) || typeof capacity['storage'] !== 'string') {
    causes.push(cause('spec.capacity', 'FieldValueRequired', 'Required value'));
  } else if (Object.keys(capacity).some((key) => key !== 'storage')) {
    causes.push(cause('spec.capacity', 'FieldValueNotSupported', 'must contain only storage'));
  }
  const modes = spec['accessModes'];
  if (!Array.isArray(modes) || modes.length === 0) {
    causes.push(cause('spec.accessModes', 'FieldValueRequired', 'Required value'));
  } else {
    modes.forEach((mode: unknown, i) => {
      if (typeof mode !== 'string' || !ACCESS_MODES.has(mode)) {
        causes.push(cause(`spec.accessModes[${i}]`, 'FieldValueNotSupported', 'Unsupported value'));
      }
    });
  }
  const sources = SOURCES.filter((key) => spec[key] !== undefined);
  if (sources.length !== 1) {
    const message =
      sources.length === 0 ? 'must specify a volume type' : 'may not specify more than 1 volume type';
    causes.push(cause('spec', sources.length === 0 ? 'FieldValueRequired' : 'FieldValueForbidden', message));
  }
  const policy = spec['persistentVolumeReclaimPolicy'];
  if (policy !== undefined && (typeof policy !== 'string' || !RECLAIM_POLICIES.has(policy))) {
    causes.push(cause('spec.persistentVolumeReclaimPolicy', 'FieldValueNotSupported', 'Unsupported value'));
  }
  const mode = spec['volumeMode'];
  if (mode !== undefined && (typeof mode !== 'string' || !VOLUME_MODES.has(mode))) {
    causes.push(cause('spec.volumeMode', 'FieldValueNotSupported', 'Unsupported value'));
  }
  const claimRef = spec['claimRef'];
  if (claimRef !== undefined) {
    if (!isObject(claimRef)) {
      causes.push(cause('spec.claimRef', 'FieldValueTypeInvalid', 'must be an object'));
    } else {
      for (const key of ['namespace', 'name', 'uid', 'kind', 'apiVersion']) {
        if (claimRef[key] !== undefined && typeof claimRef[key] !== 'string') {
          causes.push(cause(`spec.claimRef.${key}`, 'FieldValueTypeInvalid', 'must be a string'));
        }
      }
    }
  }
  return causes;
}
