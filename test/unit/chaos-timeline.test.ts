// The chaos verdict's whole-run checks (chaos/timeline.ts) on constructed intervals: a resource live
// at any instant after its Environment was first said to be Released is released-while-live, and two
// resources of different operations live at the same instant on one volume are volume-double-mounted.
// Both scenarios E14 names (items 1 and 2) are built as the provider's record would show them.
import { describe, expect, it } from 'vitest';
import { kubeLifetimes } from '../../chaos/timeline-sources.ts';
import {
  describeDoubleMount,
  describeReleasedWhileLive,
  releasedWhileLive,
  volumeDoubleMounts,
  type ReleasedMoment,
  type ResourceLifetime,
} from '../../chaos/timeline.ts';
import { ANNOTATIONS, LABELS, MANAGED_BY } from '../../providers/agent-sandbox/names.ts';
import type { ObjectLifetime } from '../fakes/kube-api/index.ts';

const T = Date.parse('2026-12-01T05:17:11.000Z');
const at = (s: number) => T + s * 1000;
const ENV = 'env_a';

const resource = (over: Partial<ResourceLifetime> = {}): ResourceLifetime => ({
  resource: 'sim-1',
  environmentId: ENV,
  operationId: 'op-1',
  volumes: ['vol_a'],
  createdAtMs: at(0),
  deletedAtMs: at(5),
  ...over,
});
const journal = (s: number, environmentId = ENV): ReleasedMoment => ({
  environmentId,
  atMs: at(s),
  source: 'journal revision 9 (provider.succeeded)',
});

describe('released-while-live', () => {
  it.each([
    ['deleted before the Released row', resource({ deletedAtMs: at(5) }), [journal(6)], 0],
    ['deleted at the very instant of the Released row', resource({ deletedAtMs: at(6) }), [journal(6)], 0],
    [
      'deleted a microsecond after the Released row',
      resource({ deletedAtMs: at(6) + 0.001 }),
      [journal(6)],
      1,
    ],
    ['still live at the end', resource({ deletedAtMs: null }), [journal(6)], 1],
    [
      'created after the Released row, released later by a cleanup',
      resource({ createdAtMs: at(7), deletedAtMs: at(9) }),
      [journal(6)],
      1,
    ],
    ['of another Environment', resource({ environmentId: 'env_b', deletedAtMs: null }), [journal(6)], 0],
    ['of an Environment never said to be Released', resource({ deletedAtMs: null }), [], 0],
    [
      'live only at an instant of zero length',
      resource({ createdAtMs: at(7), deletedAtMs: at(7) }),
      [journal(6)],
      0,
    ],
  ] as const)('%s: %i finding(s)', (_name, r, moments, expected) => {
    expect(releasedWhileLive([r], moments)).toHaveLength(expected);
  });

  it('counts from the earliest moment anything said Released (an answer before the journal row)', () => {
    const answer: ReleasedMoment = { environmentId: ENV, atMs: at(4), source: 'POST …/release 200 (api-0)' };
    const [finding] = releasedWhileLive([resource({ deletedAtMs: at(5) })], [journal(6), answer]);
    expect(finding).toMatchObject({ releasedAtMs: at(4), releasedBy: 'POST …/release 200 (api-0)' });
    expect(finding?.liveFromMs).toBe(at(4));
    expect(finding?.liveUntilMs).toBe(at(5));
  });

  it('catches item 1: the release answered Released before the timed-out create landed', () => {
    // provision timed out (Unknown) at 0; abandon; the release's listing found nothing, so the
    // Environment went Released (journal at 2, POST …/release 200 at 2.01); the create landed at 3;
    // a sweep found it and a cleanup released it at 8.
    const late = resource({ resource: 'sim-late', createdAtMs: at(3), deletedAtMs: at(8) });
    const findings = releasedWhileLive(
      [late],
      [journal(2), { environmentId: ENV, atMs: at(2.01), source: 'POST …/release 200 (api-1)' }],
    );
    expect(findings).toEqual([
      {
        environmentId: ENV,
        resource: 'sim-late',
        operationId: 'op-1',
        releasedAtMs: at(2),
        releasedBy: 'journal revision 9 (provider.succeeded)',
        liveFromMs: at(3),
        liveUntilMs: at(8),
      },
    ]);
    expect(describeReleasedWhileLive(findings[0]!)).toBe(
      'resource sim-late (operation op-1) live from 2026-12-01T05:17:14.000000Z until 2026-12-01T05:17:19.000000Z, ' +
        'after the Environment was said to be Released at 2026-12-01T05:17:13.000000Z by journal revision 9 (provider.succeeded)',
    );
  });
});

describe('volume-double-mounted', () => {
  it.each([
    [
      'overlapping, of two operations',
      resource(),
      resource({ resource: 'sim-2', operationId: 'op-2', createdAtMs: at(4), deletedAtMs: at(9) }),
      1,
    ],
    [
      'back to back (one deleted the instant the other was created)',
      resource(),
      resource({ resource: 'sim-2', operationId: 'op-2', createdAtMs: at(5), deletedAtMs: at(9) }),
      0,
    ],
    [
      'overlapping by a microsecond',
      resource(),
      resource({ resource: 'sim-2', operationId: 'op-2', createdAtMs: at(5) - 0.001 }),
      1,
    ],
    ['of one operation (the provider duplicated it)', resource(), resource({ resource: 'sim-stray' }), 0],
    [
      'on two volumes',
      resource(),
      resource({ resource: 'sim-2', operationId: 'op-2', volumes: ['vol_b'] }),
      0,
    ],
    [
      'the later one still live',
      resource({ deletedAtMs: null }),
      resource({ resource: 'sim-2', operationId: 'op-2', createdAtMs: at(30), deletedAtMs: null }),
      1,
    ],
  ] as const)('%s: %i finding(s)', (_name, a, b, expected) => {
    expect(volumeDoubleMounts([a, b])).toHaveLength(expected);
    expect(volumeDoubleMounts([b, a])).toHaveLength(expected);
  });

  it("catches item 2: the old lease's create lands while the new lease holds the volume", () => {
    // Lease 1's create timed out (Unknown); its retry was refused before any call, which settled
    // it; the volume detached and lease 2 attached it (created at 4); lease 1's create landed at 6.
    const second = resource({
      resource: 'sim-g2',
      operationId: 'op-g2',
      createdAtMs: at(4),
      deletedAtMs: null,
    });
    const landed = resource({
      resource: 'sim-g1',
      operationId: 'op-g1',
      createdAtMs: at(6),
      deletedAtMs: at(12),
    });
    const findings = volumeDoubleMounts([second, landed]);
    expect(findings).toEqual([
      {
        volume: 'vol_a',
        first: { resource: 'sim-g2', environmentId: ENV, operationId: 'op-g2' },
        second: { resource: 'sim-g1', environmentId: ENV, operationId: 'op-g1' },
        overlapFromMs: at(6),
        overlapUntilMs: at(12),
      },
    ]);
    expect(describeDoubleMount(findings[0]!)).toBe(
      `volume vol_a mounted by sim-g2 (${ENV}, operation op-g2) and sim-g1 (${ENV}, operation op-g1) ` +
        'from 2026-12-01T05:17:17.000000Z until 2026-12-01T05:17:23.000000Z',
    );
  });
});

describe("kubeLifetimes: the fake cluster's objects as resources", () => {
  const object = (over: Partial<ObjectLifetime> & Pick<ObjectLifetime, 'kind' | 'uid'>): ObjectLifetime => ({
    apiVersion: 'v1',
    namespace: 'sandlot',
    name: 'sl-x',
    labels: {},
    annotations: {},
    ownerUids: [],
    claimNames: [],
    createdAtMs: at(0),
    deletedAtMs: at(5),
    ...over,
  });
  const claim = object({
    kind: 'SandboxClaim',
    uid: 'claim-uid',
    labels: { [LABELS.managedBy]: MANAGED_BY, [LABELS.operationId]: 'op-1' },
    annotations: { [ANNOTATIONS.environmentId]: ENV },
    deletedAtMs: at(9),
  });
  const sandbox = object({ kind: 'Sandbox', uid: 'sandbox-uid', ownerUids: ['claim-uid'] });
  const pod = object({
    kind: 'Pod',
    uid: 'pod-uid',
    ownerUids: ['sandbox-uid'],
    claimNames: ['vol-a'],
    createdAtMs: at(1),
    deletedAtMs: at(8),
  });

  it('maps Sandlot claims and the Pods under them, each with its Environment and operation', () => {
    const stranger = object({ kind: 'Pod', uid: 'other-pod', claimNames: ['vol-a'] });
    expect(kubeLifetimes([claim, sandbox, pod, stranger])).toEqual([
      {
        resource: 'SandboxClaim sandlot/sl-x (claim-uid)',
        environmentId: ENV,
        operationId: 'op-1',
        volumes: [],
        createdAtMs: at(0),
        deletedAtMs: at(9),
      },
      {
        resource: 'Pod sandlot/sl-x (pod-uid)',
        environmentId: ENV,
        operationId: 'op-1',
        volumes: ['vol-a'],
        createdAtMs: at(1),
        deletedAtMs: at(8),
      },
    ]);
  });

  it('leaves out claims Sandlot does not manage', () => {
    const foreign = { ...claim, labels: { [LABELS.operationId]: 'op-1' } };
    expect(kubeLifetimes([foreign, sandbox, pod])).toEqual([]);
  });
});
