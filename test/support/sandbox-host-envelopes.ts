// Fixtures the sandbox-host tests share: one fixed instant every envelope is issued at, control
// verification keys valid from a day before it, and the envelope input both the pure envelope
// tests and the reference-host tests sign. What each suite varies (the spec it carries, the lease
// operation, how long it lives) it passes in, so a suite's envelopes stay exactly its own.
import type { KeyObject } from 'node:crypto';
import type { OwnerBinding } from '../../providers/provider.ts';
import type { EnvelopeInput } from '../../providers/sandbox-host/envelope.ts';
import type { VerificationKey } from '../../providers/sandbox-host/trust.ts';

export const T0 = new Date('2026-12-01T12:00:00.000Z');
export const DAY = 86_400_000;
export const at = (ms: number) => new Date(T0.getTime() + ms);

/** A control verification key valid from a day before T0 until `days` after it. */
export const verificationKey = (version: number, publicKey: KeyObject, days = 30): VerificationKey => ({
  version,
  publicKey,
  notBefore: at(-DAY).toISOString(),
  notAfter: at(days * DAY).toISOString(),
});

/** What a suite chooses for its envelopes; the rest is the same everywhere. */
export interface EnvelopeFixture {
  hostId: string;
  effectiveSpec: EnvelopeInput['effectiveSpec'];
  capabilitySnapshot: EnvelopeInput['capabilitySnapshot'];
  leaseOperationId: string;
  expiresAt: Date;
}

/** Envelope `sequence` for operation `op-<sequence>`, issued at T0 under revocation epoch 1. */
export function envelopeInput(
  fixture: EnvelopeFixture,
  sequence: number,
  overrides: Partial<EnvelopeInput> = {},
): EnvelopeInput {
  return {
    tenantId: 'tenant-1',
    principal: { subject: 'user:alice' },
    operation: { id: `op-${sequence}`, kind: 'provision' },
    // Fresh copies each call, so a test that edits one envelope's documents edits only that one.
    effectiveSpec: structuredClone(fixture.effectiveSpec),
    capabilitySnapshot: structuredClone(fixture.capabilitySnapshot),
    lease: { environmentId: 'env-1', operationId: fixture.leaseOperationId, resourceGeneration: 1 },
    fence: { providerFence: 3 },
    hostId: fixture.hostId,
    sequence,
    issuedAt: T0,
    expiresAt: fixture.expiresAt,
    revocationEpoch: 1,
    ...overrides,
  };
}

/** The owner binding a provision spec carries (the provider port's OwnerBinding). */
export type SpecOwner = OwnerBinding;

export const specOwner = (overrides: Partial<SpecOwner> = {}): SpecOwner => ({
  tenantId: 'tenant-1',
  projectId: 'project-1',
  runId: 'run-1',
  environmentId: 'env-1',
  ownerHash: 'a'.repeat(40),
  lifecycleGeneration: 1,
  resourceGeneration: 1,
  providerFence: 3,
  operationId: 'lease-op-1',
  ...overrides,
});

/** A provision effective spec as the sandbox-host provider sends it. */
export const provisionSpec = (
  owner: Partial<SpecOwner> = {},
  expiresAt: string | null = null,
): Record<string, unknown> => ({
  owner: specOwner(owner),
  workspace: { volumeId: 'ws-1', mountPath: '/workspace' },
  networkPolicyGeneration: 1,
  expiresAt,
  options: {},
});
