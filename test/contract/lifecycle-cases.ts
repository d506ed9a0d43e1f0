// Contract: the happy path a lease walks (create, observe, renew, terminate).
import { describe, expect, it } from 'vitest';
import { classifyProviderFailure } from '../../providers/errors.ts';
import type { ProviderPhase } from '../../providers/provider.ts';
import {
  budget,
  failureOf,
  instantIn,
  newOwner,
  ownedBy,
  pollUntil,
  presentResource,
  provisionRequest,
  refTo,
  releaseOf,
  renewalOf,
  type ContractSubject,
} from './contract-subject.ts';

const HOUR = 3_600_000;

const phaseOrder: ProviderPhase[] = ['pending', 'scheduled', 'image-ready', 'started', 'configured'];

export function lifecycleCases(subject: () => ContractSubject): void {
  describe('create', () => {
    it('provision returns a resource stamped with the exact owner binding', async () => {
      const s = subject();
      const owner = newOwner();
      const resource = await s.provider.provision(provisionRequest(s, owner), budget());

      expect(resource.resourceId).toMatch(/\S/);
      expect(resource.owner).toEqual(owner);
      expect(phaseOrder).toContain(resource.phase);
    });

    it('describe finds the new resource present with that owner', async () => {
      const s = subject();
      const owner = newOwner();
      const resource = await s.provider.provision(provisionRequest(s, owner), budget());

      const found = presentResource(await s.provider.describe(refTo(s, resource), budget()));
      expect(found.resourceId).toBe(resource.resourceId);
      expect(found.owner).toEqual(owner);
    });
  });

  describe('observe', () => {
    it('phases progress to started and never go backwards', async () => {
      const s = subject();
      const resource = await s.provider.provision(provisionRequest(s, newOwner()), budget());

      const seen = await pollUntil(
        s,
        async () => presentResource(await s.provider.describe(refTo(s, resource), budget())).phase,
        (phase) => phase === 'started',
      );
      const ranks = [resource.phase, ...seen].map((phase) => phaseOrder.indexOf(phase));
      expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
      expect(seen.at(-1)).toBe('started');
    });

    it('configured is reported only once the guest said so, never inferred from started', async () => {
      const s = subject();
      const resource = await s.provider.provision(provisionRequest(s, newOwner()), budget());
      const describePhase = async () =>
        presentResource(await s.provider.describe(refTo(s, resource), budget())).phase;
      await pollUntil(s, describePhase, (phase) => phase === 'started');
      // Started, and nothing said it was configured: it stays started.
      expect(await describePhase()).toBe('started');
      if (s.configureGuest === undefined) return;

      await s.configureGuest(resource);
      const seen = await pollUntil(s, describePhase, (phase) => phase === 'configured');
      expect(seen.every((phase) => phase === 'started' || phase === 'configured')).toBe(true);
      expect(await describePhase()).toBe('configured');
      await s.provider.release(releaseOf(s, resource), budget());
      expect(await s.provider.describe(refTo(s, resource), budget())).toEqual({ present: false });
    });
  });

  describe('renew', () => {
    it('re-observing a started resource keeps its identity, owner and phase', async () => {
      const s = subject();
      const owner = newOwner();
      const request = provisionRequest(s, owner);
      const resource = await s.provider.provision(request, budget());
      await pollUntil(
        s,
        async () => presentResource(await s.provider.describe(refTo(s, resource), budget())).phase,
        (phase) => phase === 'started',
      );

      for (let round = 0; round < 2; round++) {
        const again = presentResource(await s.provider.describe(refTo(s, resource), budget()));
        expect(again.resourceId).toBe(resource.resourceId);
        expect(again.owner).toEqual(owner);
        expect(again.phase).toBe('started');
      }
      const reprovisioned = await s.provider.provision(request, budget());
      expect(reprovisioned.resourceId).toBe(resource.resourceId);
      expect(reprovisioned.phase).toBe('started');
    });

    it('renew moves the term to a later expiry, idempotently, keeping the resource', async () => {
      const s = subject();
      const owner = newOwner();
      const expiresAt = instantIn(HOUR);
      const resource = await s.provider.provision({ ...provisionRequest(s, owner), expiresAt }, budget());
      const before = await s.recordedTerm?.(resource);

      const later = new Date(Date.parse(expiresAt) + 2 * HOUR).toISOString();
      const receipt = await s.provider.renew(renewalOf(s, resource, later), budget());
      expect(receipt).toEqual({ resourceId: resource.resourceId, expiresAt: later });
      const after = await s.recordedTerm?.(resource);
      if (s.recordedTerm !== undefined) {
        // The provider's own term moved by exactly the renewal, and never lies before the expiry.
        expect(Date.parse(after ?? '') - Date.parse(before ?? '')).toBe(2 * HOUR);
        expect(Date.parse(after ?? '')).toBeGreaterThanOrEqual(Date.parse(later));
      }

      expect(await s.provider.renew(renewalOf(s, resource, later), budget())).toEqual(receipt);
      if (s.recordedTerm !== undefined) expect(await s.recordedTerm(resource)).toBe(after);
      const found = presentResource(await s.provider.describe(refTo(s, resource), budget()));
      expect(found.resourceId).toBe(resource.resourceId);
      expect(found.owner).toEqual(owner);
    });

    it('a lease that never expires gets no provider term', async () => {
      const s = subject();
      const resource = await s.provider.provision(
        { ...provisionRequest(s, newOwner()), expiresAt: null },
        budget(),
      );
      if (s.recordedTerm !== undefined) expect(await s.recordedTerm(resource)).toBeNull();
    });

    it('renewing a released resource is refused definitively', async () => {
      const s = subject();
      const resource = await s.provider.provision(
        { ...provisionRequest(s, newOwner()), expiresAt: instantIn(HOUR) },
        budget(),
      );
      await s.provider.release(releaseOf(s, resource), budget());

      const error = await failureOf(s.provider.renew(renewalOf(s, resource, instantIn(2 * HOUR)), budget()));
      expect(classifyProviderFailure(error)).toBe('definitive');
      expect(await s.provider.describe(refTo(s, resource), budget())).toEqual({ present: false });
    });
  });

  describe('terminate', () => {
    it('release proves absence with a receipt for the same resource and idempotency key', async () => {
      const s = subject();
      const owner = newOwner();
      const resource = await s.provider.provision(provisionRequest(s, owner), budget());

      const receipt = await s.provider.release(releaseOf(s, resource, 'release-key-1'), budget());
      expect(receipt).toEqual({
        outcome: 'KnownOwnedAbsent',
        resourceId: resource.resourceId,
        idempotencyKey: 'release-key-1',
      });
    });

    it('after release, describe reports absent and listOwned is empty', async () => {
      const s = subject();
      const owner = newOwner();
      const resource = await s.provider.provision(provisionRequest(s, owner), budget());
      await s.provider.release(releaseOf(s, resource), budget());

      expect(await s.provider.describe(refTo(s, resource), budget())).toEqual({ present: false });
      expect(await s.provider.listOwned(ownedBy(s, owner), budget())).toEqual([]);
    });
  });
}
