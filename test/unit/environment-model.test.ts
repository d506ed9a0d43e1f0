// Model-based test of the Environment machine: explore every event sequence (to a bounded depth)
// with concrete payloads, check the invariants users rely on at every explored step, and prove the
// exploration took every transition of the definition.
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { environmentMachine } from '../../machines/environment.ts';
import { environmentEventSchema, type EnvironmentEvent } from '../../machines/environment-events.ts';
import type { SandboxState } from '../../machines/environment-context.ts';
import {
  initialModel,
  isEffect,
  proposeEvents,
  serializeModel,
  step,
  type ModelBounds,
  type ModelState,
} from '../support/environment-model.ts';
import { definedTransitions } from '../support/machine-transitions.ts';
import { describeEvent, exploreModel, type Edge, type Exploration } from '../support/model-paths.ts';

const terminalSandbox = new Set<SandboxState>(['NoLease', 'Released', 'Failed']);
const currentLeaseStates = new Set<SandboxState>([
  'Provisioning',
  'Active',
  'Releasing',
  'ReconciliationRequired',
]);

function explore(bounds: ModelBounds, depth: number): Exploration {
  return exploreModel({
    initial: initialModel(),
    step,
    events: (state) => proposeEvents(state, bounds),
    serialize: serializeModel,
    stopWhen: (state) => state.depth >= depth,
  });
}

const sandboxOf = (state: ModelState) => state.snapshot.value.sandbox;

/** Why the event's fences do not name the current lease (or the attempt as it was opened), if so. */
function staleFence({ snapshot, issued }: ModelState, event: EnvironmentEvent): string | null {
  const { lifecycleGeneration, sandbox } = snapshot.context;
  if (event.type === 'environment.release') {
    return event.expectedLifecycleGeneration === lifecycleGeneration ? null : 'another lifecycle generation';
  }
  if (event.type === 'sandbox.provision' || !('resourceGeneration' in event)) return null;
  const lease = sandbox.lease;
  if (lease === null) return 'no lease';
  if (event.resourceGeneration !== lease.resourceGeneration || event.providerFence !== lease.providerFence) {
    return 'another lease';
  }
  const opened = 'attemptId' in event ? issued[event.attemptId] : undefined;
  if (opened !== undefined && 'fencingGeneration' in event) {
    if (event.fencingGeneration !== opened.fences.fencingGeneration) return 'another fencing generation';
  }
  return null;
}

/** Each returns what is wrong with the step, or null. */
const invariants: [string, (edge: Edge) => string | null][] = [
  [
    '(a) at most one lease is current, and it is the one the sandbox region holds',
    ({ to }) => {
      const lease = to.snapshot.context.sandbox.lease;
      const current = Object.entries(to.leaseRows).filter(([, state]) => currentLeaseStates.has(state));
      if (current.length > 1) return `lease rows ${JSON.stringify(to.leaseRows)} are all current`;
      if (lease === null) return current.length === 0 ? null : 'a lease row is current without a lease';
      const row = to.leaseRows[lease.resourceGeneration];
      return row === sandboxOf(to) ? null : `lease row is ${row} while the sandbox is ${sandboxOf(to)}`;
    },
  ],
  [
    '(b) every provider effect is an attempt opened under the current fences',
    ({ from, to }) => {
      const { lease, unresolved, counters } = to.snapshot.context.sandbox;
      for (const { params: effect } of (to.last?.actions ?? []).filter(isEffect)) {
        // A sweep lists what a terminal lease still owns, under that lease's fences.
        if (effect.kind === 'sweep') {
          const terminal = sandboxOf(to) === 'Released' || sandboxOf(to) === 'Failed';
          if (!terminal || lease === null || effect.operationId !== lease.operationId) {
            return `sweep ${effect.attemptId} of a lease that is not terminal`;
          }
          if (effect.attemptId in from.issued) return `attempt id ${effect.attemptId} reused`;
          continue;
        }
        // A cleanup release: under its claimed item's source fences, authorized by the current fence.
        if (effect.kind === 'cleanup') {
          const entry = Object.values(to.snapshot.context.cleanups).find(
            (i) => i.attemptId === effect.attemptId,
          );
          if (entry?.state !== 'Claimed') return `cleanup effect ${effect.attemptId} has no claimed item`;
          const { source } = entry;
          const fences = {
            lifecycleGeneration: source.lifecycleGeneration,
            resourceGeneration: source.resourceGeneration,
            providerFence: source.providerFence,
            fencingGeneration: counters.providerFence,
          };
          if (!isDeepStrictEqual(effect.fences, fences) || effect.operationId !== source.operationId) {
            return `cleanup effect ${JSON.stringify(effect.fences)} is not under ${JSON.stringify(fences)}`;
          }
          if (effect.attemptId in from.issued) return `attempt id ${effect.attemptId} reused`;
          continue;
        }
        // A BuildTest step: under the fences of the lease its operation was reserved on (the
        // runner's gate supersedes it when that lease is no longer the current Active one).
        if (effect.kind === 'buildTest') {
          const entry = Object.entries(to.snapshot.context.commands).find(
            ([, i]) => i.attemptId === effect.attemptId,
          );
          if (entry === undefined) return `BuildTest effect ${effect.attemptId} has no open item`;
          const [operationId, item] = entry;
          const fences = {
            lifecycleGeneration: item.lease.lifecycleGeneration,
            resourceGeneration: item.lease.resourceGeneration,
            providerFence: item.lease.providerFence,
            fencingGeneration: item.lease.fencingGeneration,
          };
          if (
            !isDeepStrictEqual(effect.fences, fences) ||
            effect.operationId !== operationId ||
            effect.request.buildTest?.leaseOperationId !== item.lease.operationId
          ) {
            return `BuildTest effect ${effect.attemptId} is not under its lease's fences`;
          }
          if (effect.attemptId in from.issued) return `attempt id ${effect.attemptId} reused`;
          continue;
        }
        if (lease === null) return `effect ${effect.attemptId} without a lease`;
        const fences = {
          lifecycleGeneration: lease.lifecycleGeneration,
          resourceGeneration: lease.resourceGeneration,
          providerFence: lease.providerFence,
          fencingGeneration: lease.currentFencingGeneration,
        };
        if (!isDeepStrictEqual(effect.fences, fences) || effect.operationId !== lease.operationId) {
          return `effect ${JSON.stringify(effect.fences)} is not under the lease's ${JSON.stringify(fences)}`;
        }
        if (effect.attemptId in from.issued) return `attempt id ${effect.attemptId} reused`;
        const recorded = unresolved[effect.attemptId];
        // A describe reads only, a renew moves only the provider's term: they block nothing, so
        // the machine keeps no record of them open.
        const tracked =
          effect.kind === 'describe' || effect.kind === 'renew'
            ? !(effect.attemptId in unresolved)
            : effect.kind === 'listOwned'
              ? lease.reconcileAttemptId === effect.attemptId
              : recorded?.kind === effect.kind &&
                recorded.fencingGeneration === fences.fencingGeneration &&
                recorded.resourceGeneration === fences.resourceGeneration;
        if (!tracked) return `effect ${effect.attemptId} is not recorded as open`;
      }
      return null;
    },
  ],
  [
    '(c) lifecycle is Released only with no unresolved attempt and no live sandbox',
    ({ to }) => {
      if (to.snapshot.value.lifecycle !== 'Released') return null;
      const unresolved = Object.keys(to.snapshot.context.sandbox.unresolved);
      if (unresolved.length > 0) return `Released with unresolved ${unresolved.join(', ')}`;
      return terminalSandbox.has(sandboxOf(to)) ? null : `Released with the sandbox ${sandboxOf(to)}`;
    },
  ],
  [
    '(d) an event with stale or tampered fences never changes the state value',
    ({ from, event, to }) => {
      const stale = staleFence(from, event);
      if (stale === null || isDeepStrictEqual(from.snapshot.value, to.snapshot.value)) return null;
      return `event for ${stale} moved ${JSON.stringify(from.snapshot.value)} to ${JSON.stringify(to.snapshot.value)}`;
    },
  ],
  [
    '(e) a released or failed Sandbox is never revived: only a new provision leaves those states',
    ({ from, event, to }) => {
      const before = sandboxOf(from);
      const after = sandboxOf(to);
      const rgBefore = from.snapshot.context.sandbox.lease?.resourceGeneration ?? 0;
      const rgAfter = to.snapshot.context.sandbox.lease?.resourceGeneration ?? 0;
      if ((before === 'Released' || before === 'Failed') && after !== before) {
        const reprovisioned =
          event.type === 'sandbox.provision' && after === 'Provisioning' && rgAfter > rgBefore;
        if (!reprovisioned) return `${before} → ${after} without a new lease`;
      }
      if (after === 'Active' && before !== 'Active') {
        if (before !== 'Provisioning' && before !== 'ReconciliationRequired') return `${before} → Active`;
        if (rgAfter !== rgBefore) return 'Active under another lease than the one provisioned';
      }
      return null;
    },
  ],
  [
    '(f) environment.release is not accepted while any attempt is unresolved',
    ({ from, event, to }) => {
      if (event.type !== 'environment.release') return null;
      if (Object.keys(from.snapshot.context.sandbox.unresolved).length === 0) return null;
      const unchanged =
        isDeepStrictEqual(from.snapshot.value, to.snapshot.value) &&
        isDeepStrictEqual(from.snapshot.context.release, to.snapshot.context.release);
      return unchanged ? null : `accepted with unresolved attempts: ${JSON.stringify(to.snapshot.value)}`;
    },
  ],
  [
    '(h) lifecycle becomes Released only with no open late-resource cleanup (one may arrive later)',
    ({ from, to }) => {
      if (to.snapshot.value.lifecycle !== 'Released' || from.snapshot.value.lifecycle === 'Released')
        return null;
      const open = Object.keys(to.snapshot.context.cleanups);
      return open.length === 0 ? null : `Released with open cleanup ${open.join(', ')}`;
    },
  ],
  [
    '(i) environment.release is not accepted while a late-resource cleanup is open',
    ({ from, event, to }) => {
      if (event.type !== 'environment.release' || Object.keys(from.snapshot.context.cleanups).length === 0)
        return null;
      return isDeepStrictEqual(from.snapshot.value, to.snapshot.value) ? null : 'accepted with open cleanup';
    },
  ],
  [
    '(j) a cleanup claimed and unexpired is not claimed again; a result under an old claim changes nothing',
    ({ from, event, to }) => {
      if (!('cleanupId' in event)) return null;
      const item = from.snapshot.context.cleanups[event.cleanupId];
      const unchanged = isDeepStrictEqual(from.snapshot.context.cleanups, to.snapshot.context.cleanups);
      if (event.type === 'cleanup.claim') {
        const held =
          item?.state === 'Claimed' && item.claimExpiresAt !== null && event.at < item.claimExpiresAt;
        return held && !unchanged ? `claimed again before ${item.claimExpiresAt}` : null;
      }
      const stale = item?.claimToken !== event.claimToken;
      return stale && !unchanged ? `a result under claim ${event.claimToken} was accepted` : null;
    },
  ],
  [
    '(k) a result committed after the authority lapsed never makes the lease Active, and nothing revives it',
    ({ from, event, to }) => {
      const becameActive = sandboxOf(to) === 'Active' && sandboxOf(from) !== 'Active';
      if (!becameActive) return null;
      if (event.type === 'provider.succeeded' && event.authorityLapse !== undefined) {
        return 'Active from a result committed under a lapsed authority';
      }
      return from.snapshot.context.sandbox.lease?.authorityLapse != null
        ? 'a parked lease became Active'
        : null;
    },
  ],
  [
    '(l) expiry fences first and releases nothing: only the fencing generation moves',
    ({ from, event, to }) => {
      if (event.type !== 'sandbox.expire' || from.snapshot === to.snapshot) return null;
      const before = from.snapshot.context.sandbox.lease;
      const after = to.snapshot.context.sandbox.lease;
      if (sandboxOf(from) !== sandboxOf(to)) return `expiry moved ${sandboxOf(from)} to ${sandboxOf(to)}`;
      if (after?.currentFencingGeneration !== (before?.currentFencingGeneration ?? 0) + 1) {
        return 'expiry did not move the fencing generation by one';
      }
      return (to.last?.actions ?? []).some(isEffect) ? 'expiry called a provider' : null;
    },
  ],
  [
    '(m) only a confirmed renewal moves the expiry, only later, and never revives an expired lease',
    ({ from, event, to }) => {
      const before = from.snapshot.context.sandbox.lease;
      const after = to.snapshot.context.sandbox.lease;
      if (before === null || after === null || before.operationId !== after.operationId) return null;
      if (before.expiresAt === after.expiresAt) return null;
      if (event.type !== 'sandbox.renewed' || event.outcome !== 'Succeeded') {
        return `the expiry moved on ${event.type}`;
      }
      if (before.expired || after.expired) return 'an expired lease was renewed';
      if (before.expiresAt === null || after.expiresAt === null || after.expiresAt <= before.expiresAt) {
        return 'a renewal did not move the expiry later';
      }
      return sandboxOf(from) === 'Active' ? null : `a renewal was confirmed in ${sandboxOf(from)}`;
    },
  ],
  [
    '(n) a flush delivery is journaled only on its own lease while it is Active; a closed flush never changes',
    ({ from, event, to }) => {
      const delivered = (to.last?.actions ?? []).some(
        (a) =>
          a.type === 'record.flushReserved' ||
          (a.type === 'record.flush' && event.type === 'workspace.flushRedeliver'),
      );
      if (delivered && sandboxOf(from) !== 'Active')
        return `a flush delivery journaled in ${sandboxOf(from)}`;
      const before = from.snapshot.context.flushes;
      const after = to.snapshot.context.flushes;
      for (const [id, item] of Object.entries(before)) {
        const closed = item.state === 'Verified' || item.state === 'Refused';
        if (closed && !isDeepStrictEqual(item, after[id])) return `closed flush ${id} changed`;
      }
      const open = Object.values(after).filter((i) => i.state === 'Reserved' || i.state === 'Uncertain');
      if (open.length > 1) return `${open.length} flushes open at once`;
      const verified = Object.entries(after).filter(
        ([id, i]) => i.state === 'Verified' && before[id]?.state !== 'Verified',
      );
      if (verified.length === 0) return null;
      const lease = from.snapshot.context.sandbox.lease;
      const [, item] = verified[0]!;
      return lease?.operationId === item.terms.lease.operationId && sandboxOf(from) === 'Active'
        ? null
        : 'a flush was verified off its Active lease';
    },
  ],
  [
    '(o) the lifecycle generation moves only by environment.advance: by one, once per key, with no current lease',
    ({ from, event, to }) => {
      const before = from.snapshot.context.lifecycleGeneration;
      const after = to.snapshot.context.lifecycleGeneration;
      if (before === after) return null;
      if (event.type !== 'environment.advance') return `the lifecycle generation moved on ${event.type}`;
      if (after !== before + 1) return `advanced ${before} → ${after}`;
      if (event.operationKey in from.snapshot.context.advances)
        return `key ${event.operationKey} advanced twice`;
      if (!terminalSandbox.has(sandboxOf(from))) return `advanced with the sandbox ${sandboxOf(from)}`;
      return Object.keys(from.snapshot.context.sandbox.unresolved).length === 0
        ? null
        : 'advanced with unresolved attempts';
    },
  ],
  [
    '(g) an empty listOwned settles no unresolved attempt',
    ({ from, event, to }) => {
      if (event.type !== 'provider.succeeded' || event.kind !== 'listOwned') return null;
      if ((event.resources ?? []).length > 0) return null;
      const settled = Object.keys(from.snapshot.context.sandbox.unresolved).filter(
        (id) => !(id in to.snapshot.context.sandbox.unresolved),
      );
      const recorded = (to.last?.actions ?? []).some((a) => a.type === 'record.attemptsResolved');
      if (settled.length === 0 && !recorded) return null;
      return `an empty list settled ${settled.join(', ') || 'attempts (record.attemptsResolved)'}`;
    },
  ],
  [
    '(p) a provision call that may have had an effect is settled only by evidence about that call',
    ({ from, event, to }) => {
      const before = from.snapshot.context.sandbox.unresolved;
      const after = to.snapshot.context.sandbox.unresolved;
      const lease = from.snapshot.context.sandbox.lease;
      for (const [id, attempt] of Object.entries(before)) {
        if (attempt.kind !== 'provision' || attempt.state !== 'Unknown' || id in after) continue;
        // Its own result; or the operation's one deterministic resource, returned by a retry of
        // the provision or found by an exact listing or a release's lookup; or the provider's
        // proof that the call can no longer take effect, carried by a release's result.
        if ('attemptId' in event && event.attemptId === id) continue;
        if (event.type !== 'provider.succeeded') return `${event.type} settled Unknown ${id}`;
        if (event.kind === 'provision' && event.resource !== null) continue;
        if ((event.resources ?? []).some((r) => r.operationId === lease?.operationId)) continue;
        if (event.kind === 'release' && (event.settledCalls ?? []).includes(id)) continue;
        return `a ${event.kind} result with no evidence about it settled Unknown ${id}`;
      }
      return null;
    },
  ],
  [
    '(q) a failed provision (refused before any call, or by the provider) settles no other attempt, and fails no lease with one open',
    ({ from, event, to }) => {
      if (event.type !== 'provider.failed' || event.kind !== 'provision') return null;
      const others = Object.keys(from.snapshot.context.sandbox.unresolved).filter(
        (id) => id !== event.attemptId,
      );
      const settled = others.filter((id) => !(id in to.snapshot.context.sandbox.unresolved));
      if (settled.length > 0) return `a refusal settled ${settled.join(', ')}`;
      const open = others.filter(
        (id) =>
          from.snapshot.context.sandbox.unresolved[id]?.resourceGeneration ===
          from.snapshot.context.sandbox.lease?.resourceGeneration,
      );
      return open.length > 0 && sandboxOf(to) === 'Failed'
        ? 'the lease failed with an uncertain call open'
        : null;
    },
  ],
  [
    '(r) a result committed under lapsed authority leaves the lease neither dispatchable nor Released',
    ({ from, event, to }) => {
      if (!('authorityLapse' in event) || event.authorityLapse === undefined) return null;
      if (staleFence(from, event) !== null) return null;
      const after = sandboxOf(to);
      if (after === 'Released' && sandboxOf(from) !== 'Released')
        return 'a lapsed release result released the lease';
      if (after === 'Active' && sandboxOf(from) !== 'Active') return 'a lapsed result activated the lease';
      if (after === 'Active' && event.type === 'sandbox.observed')
        return 'a lapsed observation left the lease Active';
      return null;
    },
  ],
];

function violations(exploration: Exploration, check: (edge: Edge) => string | null): string[] {
  const found: string[] = [];
  for (const edge of exploration.edges) {
    const problem = check(edge);
    if (problem === null) continue;
    const path = exploration.paths.get(serializeModel(edge.from)) ?? [];
    found.push(`${problem}\n    after: ${[...path, edge.event].map(describeEvent).join('\n           ')}`);
  }
  return found.slice(0, 5);
}

// Genuine traffic: results echo the fences of the effect they answer; lease events may be stale.
const genuine = explore({ leases: 2, tampered: false }, 8);
// Also results whose fences were tampered with (another fencing generation or provider fence).
const tampered = explore({ leases: 2, tampered: true }, 6);

describe('Environment machine model', () => {
  it('explores a non-trivial state space with stale events in it', () => {
    expect(genuine.paths.size).toBeGreaterThan(500);
    const staleness = ({ edges }: Exploration) =>
      [...new Set(edges.map(({ from, event }) => staleFence(from, event)))].filter((r) => r !== null).sort();
    expect(staleness(genuine)).toEqual(['another lease', 'another lifecycle generation']);
    expect(staleness(tampered)).toEqual([
      'another fencing generation',
      'another lease',
      'another lifecycle generation',
    ]);
  });

  it('proposes only events the API and workers could deliver (schema-valid)', () => {
    const invalid = [...genuine.edges, ...tampered.edges]
      .map(({ event }) => event)
      .filter((event) => !environmentEventSchema.safeParse(event).success);
    expect(invalid.map(describeEvent).slice(0, 5)).toEqual([]);
  });

  it('takes every transition of the definition with genuine events', () => {
    const defined = definedTransitions(environmentMachine);
    const taken = new Set(genuine.edges.flatMap(({ to }) => to.last?.taken ?? []));
    expect(
      [...taken].filter((t) => !defined.includes(t)),
      'taken but not defined',
    ).toEqual([]);
    const untaken = defined.filter((t) => !taken.has(t));
    expect(untaken, `untaken transitions:\n${untaken.join('\n')}`).toEqual([]);
  });

  describe.each([
    ['genuine events', genuine],
    ['tampered fences', tampered],
  ])('with %s', (_, exploration) => {
    it.each(invariants)('%s', (_name, check) => {
      expect(violations(exploration, check)).toEqual([]);
    });
  });
});
