import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../store/migrate.ts';
import { openBackend, type BackendHandle } from '../../test/support/databases.ts';
import {
  budget,
  failureOf,
  newOwner,
  ownedBy,
  pollUntil,
  provisionRequest,
  releaseOf,
} from '../../test/contract/contract-subject.ts';
import type { FaultPlan } from './fault-plan.ts';
import { migrateSimulated } from './migrate.ts';
import { SimulatedProvider } from './simulated-provider.ts';

const outcome = (error: unknown) => (error as { code?: string }).code ?? 'not a ProviderError';

describe('SimulatedProvider fault plan', () => {
  let handle: BackendHandle;
  const open: SimulatedProvider[] = [];
  const simulated = (faults: FaultPlan, seed?: number) => {
    const options = { db: handle.db, optionsRevision: 'faults', faults };
    const provider = new SimulatedProvider(seed === undefined ? options : { ...options, seed });
    open.push(provider);
    return provider;
  };

  beforeAll(async () => {
    handle = await openBackend('postgres');
    await migrate(handle.db);
    await migrateSimulated(handle.db);
  });
  afterAll(async () => {
    await Promise.all(open.map((provider) => provider.close()));
    await handle.close();
  });

  it('a seeded plan is reproducible: the same seed gives the same outcomes call by call', async () => {
    const plan: FaultPlan = { rates: { serverError: 0.25, lostResponse: 0.25, timeoutAfterApply: 0 } };
    const outcomes = async (seed: number) => {
      const provider = simulated(plan, seed);
      const seen: string[] = [];
      for (let i = 0; i < 16; i++) {
        const call = provider.provision(provisionRequest({ provider }, newOwner()), budget());
        seen.push(await call.then(() => 'ok', outcome));
      }
      return seen;
    };

    const first = await outcomes(11);
    expect(await outcomes(11)).toEqual(first);
    expect(new Set(first)).toEqual(new Set(['ok', 'server-error', 'connection-reset']));
    expect(await outcomes(12)).not.toEqual(first);
  });

  it('server-error fails before applying: nothing is created', async () => {
    const provider = simulated({ script: [{ operation: 'provision', call: 1, fault: 'server-error' }] });
    const owner = newOwner();
    const error = await failureOf(provider.provision(provisionRequest({ provider }, owner), budget()));
    expect(error).toMatchObject({ kind: 'uncertain', code: 'server-error' });
    expect(await provider.countResources({ operationId: owner.operationId })).toBe(0);
  });

  it('timeout-after-apply creates the resource, then times out at the deadline', async () => {
    const provider = simulated({ script: [{ operation: 'provision', fault: 'timeout-after-apply' }] });
    const owner = newOwner();
    const started = Date.now();
    const error = await failureOf(provider.provision(provisionRequest({ provider }, owner), budget(150)));
    expect(error).toMatchObject({ kind: 'uncertain', code: 'timeout' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(await provider.countResources({ operationId: owner.operationId })).toBe(1);
  });

  it('lost-response on release deletes the resource but reports uncertain', async () => {
    const provider = simulated({ script: [{ operation: 'release', call: 1, fault: 'lost-response' }] });
    const resource = await provider.provision(provisionRequest({ provider }, newOwner()), budget());
    const error = await failureOf(provider.release(releaseOf({ provider }, resource), budget()));
    expect(error).toMatchObject({ kind: 'uncertain', code: 'connection-reset' });
    expect(await provider.countResources({ operationId: resource.owner.operationId })).toBe(0);
  });

  it('latency beyond the deadline times out without applying anything', async () => {
    const provider = simulated({ script: [{ operation: 'provision', fault: 'latency', ms: 5_000 }] });
    const owner = newOwner();
    const error = await failureOf(provider.provision(provisionRequest({ provider }, owner), budget(100)));
    expect(error).toMatchObject({ kind: 'uncertain', code: 'timeout' });
    expect(await provider.countResources({ operationId: owner.operationId })).toBe(0);
  });

  it('an abort during latency cancels the call promptly', async () => {
    const provider = simulated({ script: [{ operation: 'listOwned', fault: 'latency', ms: 5_000 }] });
    const controller = new AbortController();
    const started = Date.now();
    const call = provider.listOwned(ownedBy({ provider }, newOwner()), {
      signal: controller.signal,
      deadline: new Date(Date.now() + 10_000),
    });
    setTimeout(() => controller.abort(), 30);
    expect(await failureOf(call)).toMatchObject({ kind: 'uncertain', code: 'cancelled' });
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('duplicate-resource leaves exactly two listed resources under the owner and fence', async () => {
    const provider = simulated({
      script: [{ operation: 'provision', call: 1, fault: 'duplicate-resource' }],
    });
    const owner = newOwner();
    const resource = await provider.provision(provisionRequest({ provider }, owner), budget());
    await provider.provision(provisionRequest({ provider }, owner), budget());

    const listed = await provider.listOwned(ownedBy({ provider }, owner), budget());
    expect(listed).toHaveLength(2);
    expect(listed.map((r) => r.resourceId)).toContain(resource.resourceId);
    const exact = await provider.listOwned(ownedBy({ provider }, owner, owner.operationId), budget());
    expect(exact.map((r) => r.resourceId)).toEqual([resource.resourceId]);
    expect(await provider.countResources({ ownerHash: owner.ownerHash })).toBe(2);

    for (const found of listed) await provider.release(releaseOf({ provider }, found), budget());
    expect(await provider.listOwned(ownedBy({ provider }, owner), budget())).toEqual([]);
  });

  it('late-resource times out now and the resource appears after the delay', async () => {
    const provider = simulated({
      script: [{ operation: 'provision', call: 1, fault: 'late-resource', ms: 150 }],
    });
    const owner = newOwner();
    const query = ownedBy({ provider }, owner, owner.operationId);
    const started = Date.now();
    const error = await failureOf(provider.provision(provisionRequest({ provider }, owner), budget()));
    expect(error).toMatchObject({ kind: 'uncertain', code: 'timeout' });
    expect(await provider.listOwned(query, budget())).toEqual([]);

    const seen = await pollUntil(
      {},
      () => provider.listOwned(query, budget()),
      (found) => found.length > 0,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(seen.at(-1)?.[0]?.owner).toEqual(owner);
    const adopted = await provider.provision(provisionRequest({ provider }, owner), budget());
    expect(adopted.resourceId).toBe(seen.at(-1)?.[0]?.resourceId);
  });

  it('close() waits for pending late resources, so none is lost at shutdown', async () => {
    const provider = simulated({ script: [{ operation: 'provision', fault: 'late-resource', ms: 100 }] });
    const owner = newOwner();
    await failureOf(provider.provision(provisionRequest({ provider }, owner), budget()));
    await provider.close();
    expect(await provider.countResources({ operationId: owner.operationId })).toBe(1);
  });
});
