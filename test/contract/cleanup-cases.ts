// Contract: what reconciliation relies on: finding everything under an owner and fence (and nothing
// else), and repeats that never make a second resource or turn into a failure.
import { describe, expect, it } from 'vitest';
import { classifyProviderFailure, ProviderError } from '../../providers/errors.ts';
import {
  budget,
  failureOf,
  newOwner,
  ownedBy,
  provisionRequest,
  releaseOf,
  sameOwnerOtherOperation,
  type ContractSubject,
} from './contract-subject.ts';

const ids = (resources: { resourceId: string }[]) => resources.map((r) => r.resourceId).sort();

export function cleanupCases(subject: () => ContractSubject): void {
  describe('clean up', () => {
    it('listOwned finds every resource under one owner and fence, including a stray operation', async () => {
      const s = subject();
      const owner = newOwner();
      const first = await s.provider.provision(provisionRequest(s, owner), budget());
      const stray = await s.provider.provision(provisionRequest(s, sameOwnerOtherOperation(owner)), budget());

      const listed = await s.provider.listOwned(ownedBy(s, owner), budget());
      expect(ids(listed)).toEqual(ids([first, stray]));
      for (const resource of listed) {
        expect(resource.owner.ownerHash).toBe(owner.ownerHash);
        expect(resource.owner.providerFence).toBe(owner.providerFence);
      }
    });

    it('releasing each listed resource leaves nothing owned', async () => {
      const s = subject();
      const owner = newOwner();
      await s.provider.provision(provisionRequest(s, owner), budget());
      await s.provider.provision(provisionRequest(s, sameOwnerOtherOperation(owner)), budget());

      for (const resource of await s.provider.listOwned(ownedBy(s, owner), budget())) {
        await s.provider.release(releaseOf(s, resource), budget());
      }
      expect(await s.provider.listOwned(ownedBy(s, owner), budget())).toEqual([]);
    });

    it('listOwned with another fence or another owner hash returns none of them', async () => {
      const s = subject();
      const owner = newOwner({ providerFence: 3 });
      await s.provider.provision(provisionRequest(s, owner), budget());

      const otherFence = { ...owner, providerFence: 4 };
      const otherOwner = { ...owner, ownerHash: newOwner().ownerHash };
      expect(await s.provider.listOwned(ownedBy(s, otherFence), budget())).toEqual([]);
      expect(await s.provider.listOwned(ownedBy(s, otherOwner), budget())).toEqual([]);
      expect(await s.provider.listOwned(ownedBy(s, owner, 'op-of-someone-else'), budget())).toEqual([]);
    });
  });

  describe('idempotency', () => {
    it('provisioning one operation twice returns the same resource and lists exactly one', async () => {
      const s = subject();
      const owner = newOwner();
      const first = await s.provider.provision(provisionRequest(s, owner), budget());
      const second = await s.provider.provision(provisionRequest(s, owner), budget());

      expect(second.resourceId).toBe(first.resourceId);
      expect(second.owner).toEqual(owner);
      expect(ids(await s.provider.listOwned(ownedBy(s, owner), budget()))).toEqual([first.resourceId]);
    });

    it('concurrent provisions of one operation still make one resource', async () => {
      const s = subject();
      const owner = newOwner();
      const results = await Promise.all(
        [1, 2, 3].map(() => s.provider.provision(provisionRequest(s, owner), budget())),
      );

      expect(new Set(results.map((r) => r.resourceId)).size).toBe(1);
      expect(await s.provider.listOwned(ownedBy(s, owner), budget())).toHaveLength(1);
    });

    it('releasing twice answers KnownOwnedAbsent both times', async () => {
      const s = subject();
      const resource = await s.provider.provision(provisionRequest(s, newOwner()), budget());

      const first = await s.provider.release(releaseOf(s, resource, 'release-twice'), budget());
      const second = await s.provider.release(releaseOf(s, resource, 'release-twice'), budget());
      expect(second).toEqual(first);
      expect(second.outcome).toBe('KnownOwnedAbsent');
    });

    it('the same operation under a different owner binding is an ownership error, never adopted', async () => {
      const s = subject();
      const owner = newOwner();
      await s.provider.provision(provisionRequest(s, owner), budget());
      const intruder = { ...newOwner(), operationId: owner.operationId };

      const error = await failureOf(s.provider.provision(provisionRequest(s, intruder), budget()));
      expect(error).toBeInstanceOf(ProviderError);
      expect(classifyProviderFailure(error)).toBe('ownership');
      expect(await s.provider.listOwned(ownedBy(s, intruder), budget())).toEqual([]);
    });
  });
}
