// Deletion and garbage collection as the API server and kube-controller-manager's GC perform them.
// Foreground: the owner gets deletionTimestamp + the `foregroundDeletion` finalizer and is removed
// only once no dependent with blockOwnerDeletion remains. Background (the default): the owner goes
// at once and the GC deletes dependents whose owners are all gone on a later pass. Orphan: owner
// references to the deleted object are stripped from dependents. Scheduled pods may linger.
import { conflict } from './errors.ts';
import { resourceForKind, type ResourceType } from './resources.ts';
import type { ObjectStore } from './store.ts';
import { clone, isObject, timestamp, type KubeObject } from './types.ts';

export const FOREGROUND_FINALIZER = 'foregroundDeletion';

export type PropagationPolicy = 'Foreground' | 'Background' | 'Orphan';

export interface DeleteOptions {
  propagationPolicy?: PropagationPolicy;
  preconditions?: { uid?: string; resourceVersion?: string };
  gracePeriodSeconds?: number;
  orphanDependents?: boolean;
}

export interface DeletionSettings {
  /** Controller steps a deleted, scheduled Pod stays visible (with deletionTimestamp); 0 removes it at once. */
  podLingerSteps: number;
}

export interface DeleteResult {
  /** 200 when the object is gone (or a pod is terminating), 202 when deletion waits on finalizers. */
  code: 200 | 202;
  object: KubeObject;
}

function ownedBy(object: KubeObject, uid: string): boolean {
  return (object.metadata.ownerReferences ?? []).some((ref) => ref.uid === uid);
}

export class Deleter {
  constructor(
    private readonly store: ObjectStore,
    private readonly settings: DeletionSettings,
  ) {}

  delete(resource: ResourceType, current: KubeObject, options: DeleteOptions): DeleteResult {
    const { metadata } = current;
    const wantedUid = options.preconditions?.uid;
    if (wantedUid && wantedUid !== metadata.uid) {
      throw conflict(
        resource,
        metadata.name,
        `Precondition failed: UID in precondition: ${wantedUid}, UID in object meta: ${metadata.uid}`,
      );
    }
    const wantedVersion = options.preconditions?.resourceVersion;
    if (wantedVersion && wantedVersion !== metadata.resourceVersion) {
      throw conflict(
        resource,
        metadata.name,
        `Precondition failed: ResourceVersion in precondition: ${wantedVersion}, ResourceVersion in object meta: ${metadata.resourceVersion}`,
      );
    }
    const policy = options.propagationPolicy ?? (options.orphanDependents ? 'Orphan' : 'Background');
    const finalizers = metadata.finalizers ?? [];
    if (metadata.deletionTimestamp) {
      if (policy !== 'Foreground' || finalizers.includes(FOREGROUND_FINALIZER))
        return { code: 202, object: current };
      const next = clone(current);
      next.metadata.finalizers = [...finalizers, FOREGROUND_FINALIZER];
      return { code: 202, object: this.store.write(resource, next) };
    }
    if (policy === 'Orphan') this.orphanDependentsOf(metadata.uid);
    const next = clone(current);
    next.metadata.deletionTimestamp = timestamp();
    if (policy === 'Foreground') {
      next.metadata.deletionGracePeriodSeconds = 0;
      next.metadata.finalizers = [...finalizers, FOREGROUND_FINALIZER];
      return { code: 202, object: this.store.write(resource, next) };
    }
    if (finalizers.length > 0) {
      next.metadata.deletionGracePeriodSeconds = 0;
      return { code: 202, object: this.store.write(resource, next) };
    }
    if (this.lingers(current, options)) {
      next.metadata.deletionGracePeriodSeconds = options.gracePeriodSeconds ?? 30;
      return { code: 200, object: this.store.write(resource, next) };
    }
    this.store.delete(resource, metadata.namespace, metadata.name);
    return { code: 200, object: current };
  }

  /** A scheduled pod is terminated by its kubelet, which takes a while; unscheduled pods go at once. */
  private lingers(object: KubeObject, options: DeleteOptions): boolean {
    const scheduled = isObject(object.spec) && typeof object.spec['nodeName'] === 'string';
    return (
      object.kind === 'Pod' &&
      scheduled &&
      this.settings.podLingerSteps > 0 &&
      options.gracePeriodSeconds !== 0
    );
  }

  private orphanDependentsOf(uid: string): void {
    for (const dependent of this.store.select((o) => ownedBy(o, uid))) {
      dependent.metadata.ownerReferences = (dependent.metadata.ownerReferences ?? []).filter(
        (r) => r.uid !== uid,
      );
      if (dependent.metadata.ownerReferences.length === 0) delete dependent.metadata.ownerReferences;
      this.store.write(resourceForKind(dependent.apiVersion, dependent.kind), dependent);
    }
  }

  /** One garbage-collector pass. Returns whether it changed anything. */
  collect(): boolean {
    let changed = false;
    const waiting = this.store.select(
      (o) =>
        o.metadata.deletionTimestamp !== undefined &&
        (o.metadata.finalizers ?? []).includes(FOREGROUND_FINALIZER),
    );
    for (const owner of waiting) changed = this.advanceForeground(owner) || changed;
    // Checked as each object is reached: a Pod whose Sandbox this pass removed goes in the same pass.
    const orphaned = this.store.matching((o) => {
      const refs = o.metadata.ownerReferences ?? [];
      return refs.length > 0 && !o.metadata.deletionTimestamp && !refs.some((r) => this.store.hasUid(r.uid));
    });
    for (const dependent of orphaned) {
      const resource = resourceForKind(dependent.apiVersion, dependent.kind);
      this.delete(resource, dependent, { propagationPolicy: 'Background' });
      changed = true;
    }
    return changed;
  }

  private advanceForeground(owner: KubeObject): boolean {
    let changed = false;
    for (const dependent of this.store.select((o) => ownedBy(o, owner.metadata.uid))) {
      if (dependent.metadata.deletionTimestamp) continue;
      const hasDependents = this.store.some((o) => ownedBy(o, dependent.metadata.uid));
      const resource = resourceForKind(dependent.apiVersion, dependent.kind);
      this.delete(resource, dependent, { propagationPolicy: hasDependents ? 'Foreground' : 'Background' });
      changed = true;
    }
    const blocking = this.store.some((o) =>
      (o.metadata.ownerReferences ?? []).some(
        (r) => r.uid === owner.metadata.uid && r.blockOwnerDeletion === true,
      ),
    );
    if (blocking) return changed;
    const resource = resourceForKind(owner.apiVersion, owner.kind);
    const latest = this.store.read(resource, owner.metadata.namespace, owner.metadata.name);
    if (!latest) return changed;
    latest.metadata.finalizers = (latest.metadata.finalizers ?? []).filter((f) => f !== FOREGROUND_FINALIZER);
    if (latest.metadata.finalizers.length === 0)
      this.store.delete(resource, latest.metadata.namespace, latest.metadata.name);
    else this.store.write(resource, latest);
    return true;
  }
}
