// In-memory object storage with the server-side bookkeeping of etcd + the API server: one global
// resourceVersion counter, UIDs, creation timestamps and `generation` bumped only on spec changes.
// Every object's lifetime goes to a log that outlives the object (lifetimes.ts), and every change to
// the change feed that watches are served from (change-feed.ts): both are fed by `set` alone.
import { randomUUID } from 'node:crypto';
import { ChangeFeed, DEFAULT_HISTORY_SIZE } from './change-feed.ts';
import { LifetimeLog, type ObjectLifetime } from './lifetimes.ts';
import { labelMatcher } from './selectors.ts';
import { apiVersionOf, resourceForKind, type ResourceType } from './resources.ts';
import { clone, sameJson, timestamp, type KubeObject, type ObjectRef, type PlantedObject } from './types.ts';

/**
 * Direct access for tests; bypasses validation, admission and faults (not watches: every change
 * made here reaches open watch streams like any other). Returns copies.
 */
export interface FakeStore {
  get(ref: ObjectRef): KubeObject | undefined;
  list(
    type: { apiVersion: string; kind: string },
    options?: { namespace?: string; labelSelector?: string },
  ): KubeObject[];
  /** Creates or overwrites an object as given (e.g. a wrong or foreign one); fills missing server fields. */
  put(object: PlantedObject): KubeObject;
  /** Removes an object at once: no finalizers, no deletionTimestamp; dependents go on the next GC pass. */
  remove(ref: ObjectRef): boolean;
  /** Edits a stored object; bumps resourceVersion, and generation when the spec changed. Throws if absent. */
  mutate(ref: ObjectRef, change: (object: KubeObject) => void): KubeObject;
  /** The latest resourceVersion handed out (a removal takes one too, for its DELETED event). */
  readonly revision: number;
  /** When every object ever stored existed, removed ones included, oldest first. */
  lifetimes(): ObjectLifetime[];
}

/** Everything but metadata and status: a change here bumps `generation`. */
function specOf(object: KubeObject): Record<string, unknown> {
  const rest: Record<string, unknown> = { ...object };
  for (const field of ['metadata', 'status', 'apiVersion', 'kind']) delete rest[field];
  return rest;
}

export interface StoreOptions {
  /** How many recent changes a watch can resume from (default 10,000). */
  historySize?: number;
}

const FIRST_REVISION = 1000;

export class ObjectStore implements FakeStore {
  private readonly objects = new Map<string, KubeObject>();
  /** How many stored objects carry each UID (a planted object may repeat one). */
  private readonly uids = new Map<string, number>();
  private readonly log = new LifetimeLog();
  private counter = FIRST_REVISION;
  readonly changes: ChangeFeed;

  constructor(options: StoreOptions = {}) {
    this.changes = new ChangeFeed(FIRST_REVISION, options.historySize ?? DEFAULT_HISTORY_SIZE);
  }

  get revision(): number {
    return this.counter;
  }

  lifetimes(): ObjectLifetime[] {
    return this.log.all();
  }

  /**
   * Stores (or, with no object, removes) what the key holds, logs a change of UID and publishes the
   * change. A removal gets a resourceVersion of its own, as in etcd, which a DELETED event carries; a
   * write that kept the resourceVersion is no change and publishes nothing.
   */
  private set(resource: ResourceType, key: string, object: KubeObject | undefined): boolean {
    const previous = this.objects.get(key);
    if (object === undefined && previous === undefined) return false;
    this.log.replaced(previous, object);
    if (previous !== undefined) this.countUid(previous.metadata.uid, -1);
    if (object === undefined) {
      this.objects.delete(key);
    } else {
      this.countUid(object.metadata.uid, 1);
      this.objects.set(key, object);
    }
    const version = object?.metadata.resourceVersion;
    if (version !== undefined && version === previous?.metadata.resourceVersion) return true;
    const revision = version === undefined ? Number(this.nextVersion()) : Number(version);
    this.changes.publish({ revision, resource, previous, current: object });
    return true;
  }

  private countUid(uid: string | undefined, by: number): void {
    if (uid === undefined) return;
    const count = (this.uids.get(uid) ?? 0) + by;
    if (count > 0) this.uids.set(uid, count);
    else this.uids.delete(uid);
  }

  private key(resource: ResourceType, namespace: string | undefined, name: string): string {
    return [apiVersionOf(resource), resource.kind, resource.namespaced ? (namespace ?? '') : '', name].join(
      '|',
    );
  }

  private nextVersion(): string {
    this.counter += 1;
    return String(this.counter);
  }

  read(resource: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const found = this.objects.get(this.key(resource, namespace, name));
    return found ? clone(found) : undefined;
  }

  /**
   * Copies of the objects of one kind (in one namespace) that `matches` accepts. The predicate sees
   * the stored object itself and must not change it; only what it accepts is copied, so a pass over
   * a store of thousands of objects copies the few it wants, not all of them.
   */
  all(
    resource: ResourceType,
    namespace?: string,
    matches: (object: Readonly<KubeObject>) => boolean = () => true,
  ): KubeObject[] {
    const apiVersion = apiVersionOf(resource);
    return this.select(
      (o) =>
        o.kind === resource.kind &&
        o.apiVersion === apiVersion &&
        (namespace === undefined || o.metadata.namespace === namespace) &&
        matches(o),
    );
  }

  /** Copies of every stored object `matches` accepts (it sees the stored objects: read only). */
  select(matches: (object: Readonly<KubeObject>) => boolean): KubeObject[] {
    const found: KubeObject[] = [];
    for (const o of this.objects.values()) if (matches(o)) found.push(clone(o));
    return found;
  }

  /**
   * Copies of the stored objects `matches` accepts, one at a time as the caller asks for them: the
   * predicate sees each object as it is when reached, so changes made between two steps count.
   */
  *matching(matches: (object: Readonly<KubeObject>) => boolean): Generator<KubeObject> {
    for (const o of this.objects.values()) if (matches(o)) yield clone(o);
  }

  /** Whether any stored object is accepted by `matches` (read only), without copying any. */
  some(matches: (object: Readonly<KubeObject>) => boolean): boolean {
    for (const o of this.objects.values()) if (matches(o)) return true;
    return false;
  }

  everything(): KubeObject[] {
    return this.select(() => true);
  }

  hasUid(uid: string): boolean {
    return this.uids.has(uid);
  }

  /** Stores a new object, assigning uid, resourceVersion, creationTimestamp and generation 1. */
  insert(resource: ResourceType, object: KubeObject): KubeObject {
    const stored = clone(object);
    stored.metadata.uid = randomUUID();
    stored.metadata.resourceVersion = this.nextVersion();
    stored.metadata.creationTimestamp = timestamp();
    stored.metadata.generation = 1;
    this.set(resource, this.key(resource, stored.metadata.namespace, stored.metadata.name), stored);
    return clone(stored);
  }

  /**
   * Replaces a stored object; resourceVersion always moves, generation moves with the spec unless
   * `keepGeneration` (a pod binding sets spec.nodeName without a new generation).
   */
  write(resource: ResourceType, object: KubeObject, options: { keepGeneration?: boolean } = {}): KubeObject {
    const key = this.key(resource, object.metadata.namespace, object.metadata.name);
    const previous = this.objects.get(key);
    const stored = clone(object);
    const generation = previous?.metadata.generation ?? 1;
    const specChanged = previous !== undefined && !sameJson(specOf(previous), specOf(stored));
    stored.metadata.generation = specChanged && !options.keepGeneration ? generation + 1 : generation;
    stored.metadata.resourceVersion = this.nextVersion();
    this.set(resource, key, stored);
    return clone(stored);
  }

  delete(resource: ResourceType, namespace: string | undefined, name: string): boolean {
    return this.set(resource, this.key(resource, namespace, name), undefined);
  }

  get(ref: ObjectRef): KubeObject | undefined {
    return this.read(resourceForKind(ref.apiVersion, ref.kind), ref.namespace, ref.name);
  }

  list(
    type: { apiVersion: string; kind: string },
    options: { namespace?: string; labelSelector?: string } = {},
  ): KubeObject[] {
    const matches = labelMatcher(options.labelSelector);
    return this.all(resourceForKind(type.apiVersion, type.kind), options.namespace, matches);
  }

  put(object: PlantedObject): KubeObject {
    const resource = resourceForKind(object.apiVersion, object.kind);
    const stored = clone(object) as KubeObject;
    stored.metadata.uid ??= randomUUID();
    stored.metadata.creationTimestamp ??= timestamp();
    stored.metadata.generation ??= 1;
    if (!resource.namespaced) delete stored.metadata.namespace;
    stored.metadata.resourceVersion = this.nextVersion();
    this.set(resource, this.key(resource, stored.metadata.namespace, stored.metadata.name), stored);
    return clone(stored);
  }

  remove(ref: ObjectRef): boolean {
    return this.delete(resourceForKind(ref.apiVersion, ref.kind), ref.namespace, ref.name);
  }

  mutate(ref: ObjectRef, change: (object: KubeObject) => void): KubeObject {
    const resource = resourceForKind(ref.apiVersion, ref.kind);
    const current = this.read(resource, ref.namespace, ref.name);
    if (!current) throw new Error(`no ${ref.kind} ${ref.namespace ?? ''}/${ref.name} in the fake store`);
    change(current);
    return this.write(resource, current);
  }
}
