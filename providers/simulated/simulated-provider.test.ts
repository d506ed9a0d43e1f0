import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../store/migrate.ts';
import { listSimulatedLifetimes } from '../../store/simulated-resources.ts';
import { openBackend, type BackendHandle } from '../../test/support/databases.ts';
import {
  budget,
  failureOf,
  newOwner,
  ownedBy,
  presentResource,
  provisionRequest,
  refTo,
  releaseOf,
} from '../../test/contract/contract-subject.ts';
import { classifyProviderFailure, ProviderError } from '../errors.ts';
import { migrateSimulated } from './migrate.ts';
import { SimulatedProvider, simulatedResourceId } from './simulated-provider.ts';

describe('SimulatedProvider', () => {
  let handle: BackendHandle;

  beforeAll(async () => {
    handle = await openBackend('postgres');
    await migrate(handle.db);
    await migrateSimulated(handle.db);
  });
  afterAll(async () => {
    await handle.close();
  });

  it('advertises its identity and a plain-JSON options snapshot', () => {
    const provider = new SimulatedProvider({ db: handle.db, optionsRevision: 'rev-7' });
    expect(provider.identity).toMatchObject({ providerId: 'simulated', optionsRevision: 'rev-7' });
    const snapshot = provider.optionsSnapshot();
    expect(JSON.parse(JSON.stringify(snapshot))).toEqual({
      optionsRevision: 'rev-7',
      namespace: 'simulated',
    });
  });

  it('derives the resource ID from the operation, so every retry names the same resource', async () => {
    const provider = new SimulatedProvider({ db: handle.db, optionsRevision: 'r' });
    const owner = newOwner();
    const resource = await provider.provision(provisionRequest({ provider }, owner), budget());
    expect(resource.resourceId).toBe(simulatedResourceId(owner.operationId));
    expect(resource.resourceId).toMatch(/^sim-[0-9a-f]{20}$/);
    expect(resource.placement).toEqual({
      node: 'sim-node-1',
      endpoint: `https://${resource.resourceId}.sim.invalid`,
    });
  });

  it('phases follow the injected clock: scheduled, image-ready at 20 ms, started at 50 ms', async () => {
    let now = 1_000_000;
    const provider = new SimulatedProvider({ db: handle.db, optionsRevision: 'r', now: () => now });
    const resource = await provider.provision(provisionRequest({ provider }, newOwner()), budget());
    const phaseAt = async (t: number) => {
      now = t;
      return presentResource(await provider.describe(refTo({ provider }, resource), budget())).phase;
    };

    expect(resource.phase).toBe('scheduled');
    expect(await phaseAt(1_000_019)).toBe('scheduled');
    expect(await phaseAt(1_000_020)).toBe('image-ready');
    expect(await phaseAt(1_000_049)).toBe('image-ready');
    expect(await phaseAt(1_000_050)).toBe('started');
  });

  it('honours configured phase delays', async () => {
    let now = 0;
    const provider = new SimulatedProvider({
      db: handle.db,
      optionsRevision: 'r',
      now: () => now,
      phaseDelaysMs: { imageReady: 1_000, started: 5_000 },
    });
    const resource = await provider.provision(provisionRequest({ provider }, newOwner()), budget());
    now = 4_999;
    const listed = await provider.listOwned(ownedBy({ provider }, resource.owner), budget());
    expect(listed.map((r) => r.phase)).toEqual(['image-ready']);
  });

  it('resources survive a new provider instance on another connection (a restarted process)', async () => {
    const before = new SimulatedProvider({ db: handle.db, optionsRevision: 'r' });
    const owner = newOwner();
    const resource = await before.provision(provisionRequest({ provider: before }, owner), budget());
    await before.close();

    const after = new SimulatedProvider({ db: handle.second(), optionsRevision: 'r' });
    const found = presentResource(await after.describe(refTo({ provider: after }, resource), budget()));
    expect(found).toMatchObject({ resourceId: resource.resourceId, owner });
    expect(await after.listOwned(ownedBy({ provider: after }, owner), budget())).toHaveLength(1);
    await after.release(releaseOf({ provider: after }, resource), budget());
    expect(await after.countResources({ ownerHash: owner.ownerHash })).toBe(0);
    expect(await after.countResources({ ownerHash: owner.ownerHash, includeDeleted: true })).toBe(1);
  });

  it('records when each resource existed on the database clock, whatever clock it ages by', async () => {
    const dbNow = async () =>
      (
        await handle.db.query<{ ms: number }>(
          `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms`,
        )
      ).rows[0]!.ms;
    // The injected clock is years off: the lifetimes must not follow it.
    const provider = new SimulatedProvider({ db: handle.db, optionsRevision: 'r', now: () => 0 });
    const owner = newOwner();
    const before = await dbNow();
    const resource = await provider.provision(provisionRequest({ provider }, owner), budget());
    const between = await dbNow();
    await provider.release(releaseOf({ provider }, resource), budget());
    const after = await dbNow();

    const lifetime = (await listSimulatedLifetimes(handle.db)).find(
      (l) => l.resourceId === resource.resourceId,
    );
    expect(lifetime).toMatchObject({
      operationId: owner.operationId,
      environmentId: owner.environmentId,
      volumeId: `vol-${owner.environmentId}`,
    });
    expect(lifetime!.createdAtMs).toBeGreaterThan(before);
    expect(lifetime!.createdAtMs).toBeLessThan(between);
    expect(lifetime!.deletedAtMs).toBeGreaterThan(between);
    expect(lifetime!.deletedAtMs).toBeLessThan(after);
  });

  it('a released operation is never revived: provisioning it again is refused definitively', async () => {
    const provider = new SimulatedProvider({ db: handle.db, optionsRevision: 'r' });
    const owner = newOwner();
    const resource = await provider.provision(provisionRequest({ provider }, owner), budget());
    await provider.release(releaseOf({ provider }, resource), budget());

    const error = await failureOf(provider.provision(provisionRequest({ provider }, owner), budget()));
    expect(error).toMatchObject({ code: 'operation-released', kind: 'definitive' });
    expect(await provider.countResources({ operationId: owner.operationId })).toBe(0);
  });

  it('a malformed owner binding is refused definitively, before anything is stored', async () => {
    const provider = new SimulatedProvider({ db: handle.db, optionsRevision: 'r' });
    const owner = newOwner({ ownerHash: 'NOT-A-HASH', providerFence: 0 });

    const error = await failureOf(provider.provision(provisionRequest({ provider }, owner), budget()));
    expect(error).toBeInstanceOf(ProviderError);
    expect(classifyProviderFailure(error)).toBe('definitive');
    expect((error as Error).message).toMatch(/ownerHash.*providerFence/);
    expect(await provider.countResources({ operationId: owner.operationId, includeDeleted: true })).toBe(0);
  });

  it('stray properties on the caller’s owner object are neither stored nor returned', async () => {
    const provider = new SimulatedProvider({ db: handle.db, optionsRevision: 'r' });
    const owner = newOwner();
    const request = provisionRequest({ provider }, { ...owner, secret: 'x' } as typeof owner);
    const resource = await provider.provision(request, budget());
    expect(resource.owner).toEqual(owner);
  });
});
