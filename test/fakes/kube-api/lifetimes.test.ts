// The store's lifetime log: every object stored gets one record (per UID) that outlives it, with its
// owners and the PVCs a Pod mounts, and an interval that covers the real one to the millisecond.
import { describe, expect, it } from 'vitest';
import { LifetimeLog } from './lifetimes.ts';
import { POD, SANDBOX } from './resources.ts';
import { ObjectStore } from './store.ts';
import type { KubeObject } from './types.ts';

const pod = (name: string, uid: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name,
    namespace: 'ns',
    uid,
    resourceVersion: '1',
    generation: 1,
    creationTimestamp: '2026-12-01T00:00:00Z',
    labels: { app: 'x' },
    ownerReferences: [{ apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'Sandbox', name, uid: 'sb-1' }],
  },
  spec: {
    containers: [{ name: 'main', image: 'busybox' }],
    volumes: [{ name: 'workspace', persistentVolumeClaim: { claimName: 'vol-a' } }, { name: 'tmp' }],
  },
});

describe('LifetimeLog', () => {
  it('opens a record at the millisecond of creation and closes it at the next one after removal', () => {
    let now = 1_000.4;
    const log = new LifetimeLog(() => now);
    log.replaced(undefined, pod('p', 'uid-1'));
    now = 2_000.2;
    log.replaced(pod('p', 'uid-1'), undefined);
    expect(log.all()).toEqual([
      {
        apiVersion: 'v1',
        kind: 'Pod',
        namespace: 'ns',
        name: 'p',
        uid: 'uid-1',
        labels: { app: 'x' },
        annotations: {},
        ownerUids: ['sb-1'],
        claimNames: ['vol-a'],
        createdAtMs: 1_000,
        deletedAtMs: 2_001,
      },
    ]);
  });

  it('treats a write under the same UID as the same object and another UID as a new one', () => {
    let now = 10;
    const log = new LifetimeLog(() => now);
    log.replaced(undefined, pod('p', 'uid-1'));
    now = 20;
    log.replaced(pod('p', 'uid-1'), pod('p', 'uid-1'));
    now = 30;
    log.replaced(pod('p', 'uid-1'), pod('p', 'uid-2'));
    expect(log.all().map((l) => [l.uid, l.createdAtMs, l.deletedAtMs])).toEqual([
      ['uid-1', 10, 31],
      ['uid-2', 30, null],
    ]);
  });
});

describe('ObjectStore lifetimes', () => {
  it('logs inserts, writes, puts and deletes, keeping removed objects', () => {
    const store = new ObjectStore();
    const inserted = store.insert(POD, pod('p', 'ignored'));
    store.write(POD, { ...inserted, status: { phase: 'Running' } });
    store.put({
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'Sandbox',
      metadata: { name: 's', namespace: 'ns' },
    });
    expect(store.delete(POD, 'ns', 'p')).toBe(true);
    expect(store.delete(POD, 'ns', 'p')).toBe(false);

    const lifetimes = store.lifetimes();
    expect(lifetimes.map((l) => [l.kind, l.name, l.uid === inserted.metadata.uid])).toEqual([
      ['Pod', 'p', true],
      ['Sandbox', 's', false],
    ]);
    expect(lifetimes[0]?.deletedAtMs).not.toBeNull();
    expect(lifetimes[1]?.deletedAtMs).toBeNull();
    expect(store.read(SANDBOX, 'ns', 's')).toBeDefined();
  });
});
