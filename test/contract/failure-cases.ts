// Contract: failures a worker must survive. A lost response or an exhausted budget is uncertain,
// never definitive, and the exact lookups that reconciliation uses then tell the truth.
import { describe, expect, it } from 'vitest';
import { classifyProviderFailure, ProviderError } from '../../providers/errors.ts';
import type { CallOptions, ProviderResource } from '../../providers/provider.ts';
import {
  budget,
  failureOf,
  newOwner,
  ownedBy,
  pollUntil,
  presentResource,
  provisionRequest,
  refTo,
  releaseOf,
  type ContractSubject,
} from './contract-subject.ts';

async function expectUncertain(call: Promise<unknown>): Promise<void> {
  const error = await failureOf(call);
  expect(error).toBeInstanceOf(ProviderError);
  expect(classifyProviderFailure(error)).toBe('uncertain');
}

/** Every operation of the port with `options`; each must fail uncertain. */
async function expectEveryCallUncertain(
  s: ContractSubject,
  resource: ProviderResource,
  options: () => CallOptions,
): Promise<void> {
  const owner = newOwner();
  await expectUncertain(s.provider.provision(provisionRequest(s, owner), options()));
  await expectUncertain(s.provider.describe(refTo(s, resource), options()));
  await expectUncertain(s.provider.listOwned(ownedBy(s, resource.owner), options()));
  await expectUncertain(s.provider.release(releaseOf(s, resource), options()));
  // Whatever the refused provision did, it made at most one resource.
  const listed = await s.provider.listOwned(ownedBy(s, owner, owner.operationId), budget());
  expect(listed.length).toBeLessThanOrEqual(1);
}

export function failureCases(subject: () => ContractSubject): void {
  describe('the in-flight proof (callSettled)', () => {
    it('never proves an uncertain provision over at its own deadline; long after, the exact listing shows what it did', async () => {
      const s = subject();
      const owner = newOwner();
      s.faults.loseNextResponse('provision');
      const options = budget();
      await expectUncertain(s.provider.provision(provisionRequest(s, owner), options));
      const call = { operationId: owner.operationId, deadline: options.deadline };
      // At the deadline (or just before it) the call may still be landing: no proof.
      expect(await s.provider.callSettled(call, options.deadline)).toBe(false);
      expect(await s.provider.callSettled(call, new Date(options.deadline.getTime() - 1))).toBe(false);
      // An hour later every provider's window has passed (its host answered, for sandbox-host).
      const later = new Date(options.deadline.getTime() + 3_600_000);
      expect(await s.provider.callSettled(call, later)).toBe(true);
      const listed = await s.provider.listOwned(ownedBy(s, owner, owner.operationId), budget());
      expect(listed).toHaveLength(1);
    });
  });

  describe('lost connection', () => {
    it('a provision whose response is lost is uncertain; the exact listing finds one resource to adopt', async () => {
      const s = subject();
      const owner = newOwner();
      s.faults.loseNextResponse('provision');
      await expectUncertain(s.provider.provision(provisionRequest(s, owner), budget()));

      const listed = await s.provider.listOwned(ownedBy(s, owner, owner.operationId), budget());
      expect(listed).toHaveLength(1);
      expect(listed[0]?.owner).toEqual(owner);
      const retried = await s.provider.provision(provisionRequest(s, owner), budget());
      expect(retried.resourceId).toBe(listed[0]?.resourceId);
      expect(await s.provider.listOwned(ownedBy(s, owner), budget())).toHaveLength(1);
    });

    it('a release whose response is lost is uncertain; exact lookups then show it absent', async () => {
      const s = subject();
      const owner = newOwner();
      const resource = await s.provider.provision(provisionRequest(s, owner), budget());
      s.faults.loseNextResponse('release');
      await expectUncertain(s.provider.release(releaseOf(s, resource), budget()));

      await pollUntil(
        s,
        () => s.provider.describe(refTo(s, resource), budget()),
        (result) => !result.present,
      );
      expect(await s.provider.listOwned(ownedBy(s, owner, owner.operationId), budget())).toEqual([]);
      const receipt = await s.provider.release(releaseOf(s, resource), budget());
      expect(receipt.outcome).toBe('KnownOwnedAbsent');
    });
  });

  describe('deadline and abort', () => {
    it('an already-aborted signal makes every call uncertain', async () => {
      const s = subject();
      const resource = await s.provider.provision(provisionRequest(s, newOwner()), budget());
      await expectEveryCallUncertain(s, resource, () => {
        const controller = new AbortController();
        controller.abort(new Error('caller went away'));
        return { signal: controller.signal, deadline: new Date(Date.now() + 15_000) };
      });
    });

    it('a deadline already in the past makes every call uncertain', async () => {
      const s = subject();
      const resource = await s.provider.provision(provisionRequest(s, newOwner()), budget());
      await expectEveryCallUncertain(s, resource, () => ({
        signal: new AbortController().signal,
        deadline: new Date(Date.now() - 1_000),
      }));
    });
  });

  describe('ownership', () => {
    it('describing, renewing or releasing a resource under another owner binding is an ownership error', async () => {
      const s = subject();
      const resource = await s.provider.provision(provisionRequest(s, newOwner()), budget());
      const foreign = { ...refTo(s, resource), owner: { ...resource.owner, providerFence: 99 } };

      const described = await failureOf(s.provider.describe(foreign, budget()));
      expect(classifyProviderFailure(described)).toBe('ownership');
      const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
      const renewed = await failureOf(s.provider.renew({ ...foreign, expiresAt }, budget()));
      expect(classifyProviderFailure(renewed)).toBe('ownership');
      const released = await failureOf(s.provider.release({ ...foreign, idempotencyKey: 'k' }, budget()));
      expect(classifyProviderFailure(released)).toBe('ownership');
      expect(presentResource(await s.provider.describe(refTo(s, resource), budget())).resourceId).toBe(
        resource.resourceId,
      );
    });
  });
}
