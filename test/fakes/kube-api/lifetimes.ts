// When each object existed, as the store saw it: one record per object (per UID), opened when it is
// stored and closed when it is removed, never dropped. A test or the chaos verdict reads it to check
// the whole history (was a Pod running while its Environment was already reported Released? did two
// Pods mount one volume at once?), not only what is left at the end.
//
// The clock is Date.now(), which counts whole milliseconds: a creation is recorded at the
// millisecond it fell in (no later than it happened) and a removal at the next one (no earlier), so
// a recorded interval always covers the real one and rounding never hides an overlap.
import type { KubeObject } from './types.ts';

export interface ObjectLifetime {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  uid: string;
  /** As stored at creation. */
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** UIDs of its owners at creation (an orphaning delete strips them later; this keeps them). */
  ownerUids: string[];
  /** The PersistentVolumeClaims a Pod's spec mounts (empty for every other kind). */
  claimNames: string[];
  /** Epoch milliseconds, rounded down. */
  createdAtMs: number;
  /** Epoch milliseconds, rounded up; null while it is stored. */
  deletedAtMs: number | null;
}

/** The PersistentVolumeClaim names a Pod's volumes refer to. */
export function claimNames(pod: KubeObject): string[] {
  const volumes = pod.spec?.['volumes'];
  if (!Array.isArray(volumes)) return [];
  return (volumes as { persistentVolumeClaim?: { claimName?: string } }[]).flatMap((v) =>
    v.persistentVolumeClaim?.claimName ? [v.persistentVolumeClaim.claimName] : [],
  );
}

export class LifetimeLog {
  private readonly records: ObjectLifetime[] = [];
  private readonly open = new Map<string, ObjectLifetime>();

  constructor(private readonly now: () => number = Date.now) {}

  /** `previous` was stored under the key `next` now takes (either may be absent). */
  replaced(previous: KubeObject | undefined, next: KubeObject | undefined): void {
    if (previous?.metadata.uid === next?.metadata.uid) return;
    if (previous !== undefined) this.closed(previous.metadata.uid);
    if (next !== undefined) this.opened(next);
  }

  /** Copies, oldest first. */
  all(): ObjectLifetime[] {
    return this.records.map((r) => structuredClone(r));
  }

  private opened(object: KubeObject): void {
    const { metadata } = object;
    const record: ObjectLifetime = {
      apiVersion: object.apiVersion,
      kind: object.kind,
      ...(metadata.namespace === undefined ? {} : { namespace: metadata.namespace }),
      name: metadata.name,
      uid: metadata.uid,
      labels: { ...metadata.labels },
      annotations: { ...metadata.annotations },
      ownerUids: (metadata.ownerReferences ?? []).map((ref) => ref.uid),
      claimNames: object.kind === 'Pod' ? claimNames(object) : [],
      createdAtMs: Math.floor(this.now()),
      deletedAtMs: null,
    };
    this.records.push(record);
    this.open.set(metadata.uid, record);
  }

  private closed(uid: string): void {
    const record = this.open.get(uid);
    if (record === undefined) return;
    record.deletedAtMs = Math.floor(this.now()) + 1;
    this.open.delete(uid);
  }
}
