// The assignment envelope and host result, end to end but pure: real Ed25519 keys generated per
// run, an injected clock, and the acceptance state passed through JSON where a restart would.
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { ERROR_CODE_PATTERN, SandlotError } from '../../lib/errors.ts';
import {
  type AcceptanceState,
  emptyAcceptanceState,
  parseAcceptanceState,
  recordResult,
} from './acceptance-state.ts';
import {
  type EnvelopeInput,
  type EnvelopeVerdict,
  type EnvelopeWire,
  signEnvelope,
  verifyEnvelope,
} from './envelope.ts';
import { EnvelopeSigningError, TrustReplacementError } from './errors.ts';
import {
  acceptChunk,
  appendChunk,
  type HostResultBody,
  type HostResultWire,
  signHostResult,
  startChain,
  verifyHostResult,
} from './host-result.ts';
import { signCanonical } from './signing.ts';
import { createTrust, replaceTrust, type VerificationTrust } from './trust.ts';
import { at, DAY, envelopeInput, verificationKey } from '../../test/support/sandbox-host-envelopes.ts';

const HOST = 'host-a';

const keyPair = () => generateKeyPairSync('ed25519');
const control = { v1: keyPair(), v2: keyPair(), v3: keyPair() };
const rogue = keyPair();
const hostKey = keyPair();
const fresh = keyPair().publicKey;

const v1 = verificationKey(1, control.v1.publicKey);
const v2 = verificationKey(2, control.v2.publicKey, 60);
const v3 = verificationKey(3, control.v3.publicKey, 90);
const baseTrust = createTrust({ current: v1, next: null, revocationEpoch: 1 });

const fixture = {
  hostId: HOST,
  effectiveSpec: { image: 'sandbox:1', cpu: '500m', env: { B: '2', A: '1' } },
  capabilitySnapshot: { capabilities: ['process'], revision: 'r1' },
  leaseOperationId: 'op-lease-1',
  expiresAt: at(60_000),
};
const input = (sequence: number, overrides: Partial<EnvelopeInput> = {}): EnvelopeInput =>
  envelopeInput(fixture, sequence, overrides);

const sign = (
  sequence: number,
  overrides: Partial<EnvelopeInput> = {},
  version = 1,
  key = control.v1.privateKey,
) => signEnvelope(input(sequence, overrides), { version, privateKey: key });

/** What arrives over the wire: JSON text parsed back, as the host sees it. */
const overWire = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

function verify(
  wire: unknown,
  state: AcceptanceState = emptyAcceptanceState(),
  trust: VerificationTrust = baseTrust,
  now = at(1_000),
): EnvelopeVerdict {
  return verifyEnvelope(overWire(wire), trust, { hostId: HOST, state }, now);
}

function accepted(verdict: EnvelopeVerdict): AcceptanceState {
  if (verdict.verdict !== 'accepted') throw new Error(`expected accepted, got ${verdict.verdict}`);
  return verdict.state;
}

/** A wire with one body member replaced (after signing: the signature no longer matches). */
function tampered(wire: EnvelopeWire, mutate: (body: Record<string, unknown>) => void): unknown {
  const copy = overWire(wire) as { body: Record<string, unknown> };
  mutate(copy.body);
  return copy;
}

describe('signing', () => {
  it('signs canonical bytes, so key order on the wire does not matter', () => {
    const wire = sign(1);
    const reordered = {
      keyVersion: wire.keyVersion,
      signature: wire.signature,
      body: reverseKeys(wire.body),
    };
    expect(JSON.stringify(reordered)).not.toBe(JSON.stringify(wire));
    const a = verify(wire);
    const b = verify(reordered);
    expect(a.verdict).toBe('accepted');
    expect(b.verdict).toBe('accepted');
    if (a.verdict === 'accepted' && b.verdict === 'accepted') expect(a.envelopeDigest).toBe(b.envelopeDigest);
  });

  it('binds the effective spec and capability snapshot by the SHA-256 of their canonical JSON', () => {
    const wire = sign(1);
    expect(wire.body.effectiveSpec.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(wire.body.protocol).toBe('sandbox.host-control/v1');
    const respelled = sign(1, {
      effectiveSpec: { env: { A: '1', B: '2' }, cpu: '500m', image: 'sandbox:1' },
    });
    expect(respelled.body.effectiveSpec.sha256).toBe(wire.body.effectiveSpec.sha256);
  });

  it.each([
    ['a zero fence', { fence: { providerFence: 0 } }],
    ['an empty tenant', { tenantId: '' }],
    ['a zero revocation epoch', { revocationEpoch: 0 }],
  ])('refuses to sign %s', (_name, overrides: Partial<EnvelopeInput>) => {
    expect(() => sign(1, overrides)).toThrow(EnvelopeSigningError);
  });

  it('refuses to sign with a key that is not an Ed25519 private key', () => {
    expect(() => signEnvelope(input(1), { version: 1, privateKey: control.v1.publicKey })).toThrow(
      EnvelopeSigningError,
    );
  });
});

function reverseKeys(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([k, v]) => [k, reverseKeys(v)]),
  );
}

describe('verifyEnvelope refusals', () => {
  it('accepts the first envelope at sequence 1 and records it', () => {
    const verdict = verify(sign(1));
    const state = accepted(verdict);
    expect(state.lastSequence).toBe(1);
    expect(state.accepted[0]?.result).toBeNull();
    expect(state.fences).toEqual([{ environmentId: 'env-1', providerFence: 3 }]);
    expect(Object.isFrozen(state) && Object.isFrozen(state.accepted)).toBe(true);
  });

  const cases: [string, () => unknown, string, Partial<{ trust: VerificationTrust; now: Date }>?][] = [
    ['a rogue key under a trusted version', () => sign(1, {}, 1, rogue.privateKey), 'signature-invalid'],
    ['altered bytes', () => tampered(sign(1), (b) => (b.tenantId = 'tenant-2')), 'signature-invalid'],
    ['a rogue key under an unknown version', () => sign(1, {}, 7, rogue.privateKey), 'key-unknown'],
    [
      'a key past its notAfter',
      () => sign(1, { expiresAt: at(40 * DAY) }),
      'key-expired',
      { now: at(31 * DAY) },
    ],
    ['a key before its notBefore', () => sign(1), 'key-expired', { now: at(-2 * DAY) }],
    ['a zero fence', () => tampered(sign(1), (b) => (b.fence = { providerFence: 0 })), 'legacy-binding'],
    ['a zero resource generation', () => tampered(sign(1), (b) => setLease(b, 0)), 'legacy-binding'],
    [
      'an empty principal',
      () => tampered(sign(1), (b) => (b.principal = { subject: ' ' })),
      'legacy-binding',
    ],
    ['a zero spec digest', () => tampered(sign(1), (b) => zeroDigest(b)), 'legacy-binding'],
    ['no signing-key version', () => tampered(sign(1), (b) => delete b.signingKeyVersion), 'legacy-binding'],
    ['no revocation epoch', () => tampered(sign(1), (b) => delete b.revocationEpoch), 'legacy-binding'],
    ['no wire key version', () => ({ ...sign(1), keyVersion: undefined }), 'legacy-binding'],
    ['a zero sequence', () => tampered(sign(1), (b) => (b.sequence = 0)), 'legacy-binding'],
    ['an unknown member', () => tampered(sign(1), (b) => (b.extra = true)), 'malformed'],
    [
      'another protocol',
      () => tampered(sign(1), (b) => (b.protocol = 'sandbox.host-control/v0')),
      'malformed',
    ],
    ['a spec that does not match its digest', () => tampered(sign(1), (b) => respec(b)), 'malformed'],
    [
      'a non-canonical instant',
      () => tampered(sign(1), (b) => (b.expiresAt = '2026-12-01T12:01:00Z')),
      'malformed',
    ],
    ['a wire key version unlike the body', () => ({ ...sign(1), keyVersion: 2 }), 'malformed'],
    ['not an object', () => 'envelope', 'malformed'],
    ['another host', () => sign(1, { hostId: 'host-b' }), 'wrong-host'],
    ['a gap before the first', () => sign(2), 'sequence-gap'],
    ['a revoked epoch', () => sign(1), 'epoch-revoked', { trust: epoch(2) }],
    [
      'an epoch this host does not yet trust',
      () => sign(1, { revocationEpoch: 3 }),
      'epoch-unknown',
      { trust: epoch(2) },
    ],
  ];

  it.each(cases)('refuses %s', (_name, make, code, context) => {
    const state = emptyAcceptanceState();
    const verdict = verify(make(), state, context?.trust, context?.now);
    expect(verdict.verdict).toBe('refused');
    if (verdict.verdict !== 'refused') return;
    expect(verdict.code).toBe(code);
    expect(verdict.error.code).toBe(code);
    expect(verdict.error).toBeInstanceOf(SandlotError);
    expect(verdict.error.name).toBe('EnvelopeRefusedError');
    expect(verdict.code).toMatch(ERROR_CODE_PATTERN);
    expect(verdict.state).toBe(state);
    expect(verdict.error.message).not.toContain(sign(1).signature);
  });

  it('expires at the boundary: one millisecond before expiresAt verifies, expiresAt itself does not', () => {
    expect(verify(sign(1), undefined, undefined, at(59_999)).verdict).toBe('accepted');
    const verdict = verify(sign(1), undefined, undefined, at(60_000));
    expect(verdict.verdict === 'declined' && verdict.code).toBe('expired');
  });

  it('refuses a sequence that skips ahead, and a refusal consumes no sequence number', () => {
    const one = accepted(verify(sign(1)));
    expect(refusal(verify(sign(3), one))).toBe('sequence-gap');
    expect(refusal(verify(sign(3), one, undefined, at(60_000)))).toBe('sequence-gap');
    expect(refusal(verify(sign(1, { tenantId: 'tenant-2' }), one, undefined, at(60_000)))).toBe(
      'altered-duplicate',
    );
    expect(accepted(verify(sign(2), one)).lastSequence).toBe(2);
  });

  it('refuses a validly signed different envelope at an accepted sequence as an altered duplicate', () => {
    const one = accepted(verify(sign(1)));
    const other = sign(1, { operation: { id: 'op-other', kind: 'release' } });
    expect(refusal(verify(other, one))).toBe('altered-duplicate');
  });

  it('refuses altered bytes of an accepted envelope on the signature, never as a replay', () => {
    const one = accepted(verify(sign(1)));
    expect(
      refusal(
        verify(
          tampered(sign(1), (b) => (b.tenantId = 'tenant-2')),
          one,
        ),
      ),
    ).toBe('signature-invalid');
  });

  it('refuses a fence below the highest accepted for the lease, per Environment', () => {
    const s1 = accepted(verify(sign(1, { fence: { providerFence: 5 } })));
    expect(refusal(verify(sign(2, { fence: { providerFence: 4 } }), s1))).toBe('declined:stale-fence');
    const otherEnv = { environmentId: 'env-2', operationId: 'op-lease-2', resourceGeneration: 1 };
    expect(verify(sign(2, { fence: { providerFence: 4 }, lease: otherEnv }), s1).verdict).toBe('accepted');
    const s2 = accepted(verify(sign(2, { fence: { providerFence: 5 } }), s1));
    const s3 = accepted(verify(sign(3, { fence: { providerFence: 9 } }), s2));
    expect(s3.fences).toEqual([{ environmentId: 'env-1', providerFence: 9 }]);
  });
});

describe('declined envelopes (authentic and next, answered with a refusal)', () => {
  function declined(verdict: EnvelopeVerdict) {
    if (verdict.verdict !== 'declined') throw new Error(`expected declined, got ${verdict.verdict}`);
    return verdict;
  }

  it('declines an expired envelope at the next sequence: the sequence is consumed, no fence moves', () => {
    const one = accepted(verify(sign(1)));
    const late = sign(2, { fence: { providerFence: 8 } });
    const verdict = declined(verify(late, one, undefined, at(60_000)));
    expect(verdict.code).toBe('expired');
    expect(verdict.error.code).toBe('expired');
    expect(verdict.body.sequence).toBe(2);
    expect(verdict.state.lastSequence).toBe(2);
    expect(verdict.state.accepted[1]).toMatchObject({ operationId: 'op-2', result: null });
    expect(verdict.state.fences).toEqual([{ environmentId: 'env-1', providerFence: 3 }]);
    // The next envelope proceeds, and the declined one is an exact replay across a JSON round trip.
    const persisted = parseAcceptanceState(JSON.stringify(verdict.state));
    expect(accepted(verify(sign(3), persisted)).lastSequence).toBe(3);
    expect(verify(late, persisted, undefined, at(60_000)).verdict).toBe('replay');
  });

  it('declines a stale fence of a mutating kind at the next sequence', () => {
    const one = accepted(verify(sign(1, { fence: { providerFence: 5 } })));
    for (const kind of ['provision', 'renew', 'release'] as const) {
      const wire = sign(2, { fence: { providerFence: 4 }, operation: { id: 'op-2', kind } });
      const verdict = declined(verify(wire, one));
      expect(verdict.code).toBe('stale-fence');
      expect(verdict.state.fences).toEqual(one.fences);
    }
  });

  it('neither checks nor raises the fence for reads', () => {
    const one = accepted(verify(sign(1, { fence: { providerFence: 3 } })));
    const describe = { operation: { id: 'op-2', kind: 'describe' as const } };
    const high = accepted(verify(sign(2, { ...describe, fence: { providerFence: 9 } }), one));
    expect(high.fences).toEqual([{ environmentId: 'env-1', providerFence: 3 }]);
    const list = { operation: { id: 'op-3', kind: 'listOwned' as const } };
    const low = accepted(verify(sign(3, { ...list, fence: { providerFence: 1 } }), high));
    expect(low.fences).toEqual(high.fences);
    // The lease's real fence still proceeds after a read carrying a higher one.
    const renew = { operation: { id: 'op-4', kind: 'renew' as const } };
    const s4 = accepted(verify(sign(4, { ...renew, fence: { providerFence: 3 } }), low));
    expect(s4.lastSequence).toBe(4);
  });
});

function refusal(verdict: EnvelopeVerdict): string {
  if (verdict.verdict === 'refused') return verdict.code;
  return verdict.verdict === 'declined' ? `declined:${verdict.code}` : verdict.verdict;
}
function setLease(body: Record<string, unknown>, resourceGeneration: number): void {
  body.lease = { ...(body.lease as object), resourceGeneration };
}
function zeroDigest(body: Record<string, unknown>): void {
  body.effectiveSpec = { ...(body.effectiveSpec as object), sha256: '0'.repeat(64) };
}
function respec(body: Record<string, unknown>): void {
  body.effectiveSpec = { ...(body.effectiveSpec as object), document: { image: 'other' } };
}
function epoch(revocationEpoch: number): VerificationTrust {
  return replaceTrust(baseTrust, { current: v1, next: null, revocationEpoch });
}

function resultFor(
  envelope: EnvelopeWire,
  digest: string,
  stdout: string[] = ['hello ', 'world'],
): HostResultWire {
  return signHostResult(
    {
      operationId: envelope.body.operation.id,
      envelopeDigest: digest,
      status: 'started',
      document: { resourceId: 'sbx-1' },
      stdout: stdout.map((s) => Buffer.from(s)),
      stderr: [Buffer.from('warn')],
      completedAt: at(2_000),
    },
    { hostId: HOST, version: 1, privateKey: hostKey.privateKey },
  );
}

describe('replay', () => {
  it('answers an exact duplicate from the state, across a JSON round trip of that state', () => {
    const wire = sign(1);
    const first = verify(wire);
    if (first.verdict !== 'accepted') throw new Error(first.verdict);

    const beforeResult = verify(wire, parseAcceptanceState(JSON.stringify(first.state)));
    expect(beforeResult.verdict).toBe('replay');
    if (beforeResult.verdict === 'replay') expect(beforeResult.result).toBeNull();

    const result = resultFor(wire, first.envelopeDigest);
    const journaled = JSON.stringify(recordResult(first.state, 1, result));
    const restarted = parseAcceptanceState(journaled);
    const replay = verify(wire, restarted);
    expect(replay.verdict).toBe('replay');
    if (replay.verdict !== 'replay') return;
    expect(replay.code).toBe('replay');
    expect(replay.envelopeDigest).toBe(first.envelopeDigest);
    expect(replay.result).toEqual(result);
    expect(replay.state).toBe(restarted);
    expect(canonicalJson(replay.result)).toBe(canonicalJson(result));
  });

  it('replays an accepted envelope even after it expired or its key was retired (no new effect)', () => {
    const wire = sign(1);
    const state = accepted(verify(wire));
    expect(verify(wire, state, baseTrust, at(DAY)).verdict).toBe('replay');
    const rotated = replaceTrust(baseTrust, { current: v2, next: null, revocationEpoch: 1 });
    expect(verify(wire, state, rotated).verdict).toBe('replay');
  });

  it('records a result once: the identical result again is a no-op, another is a conflict', () => {
    const wire = sign(1);
    const first = verify(wire);
    if (first.verdict !== 'accepted') throw new Error(first.verdict);
    const result = resultFor(wire, first.envelopeDigest);
    const recorded = recordResult(first.state, 1, result);
    expect(recordResult(recorded, 1, overWire(result) as HostResultWire)).toBe(recorded);
    const other = resultFor(wire, first.envelopeDigest, ['different']);
    expect(() => recordResult(recorded, 1, other)).toThrow(
      expect.objectContaining({ code: 'result-conflict' }),
    );
    const misbound = resultFor(wire, 'f'.repeat(64));
    expect(() => recordResult(first.state, 1, misbound)).toThrow(
      expect.objectContaining({ code: 'result-binding-mismatch' }),
    );
  });

  it('refuses a persisted state whose accepted sequences have a hole', () => {
    const two = accepted(verify(sign(2), accepted(verify(sign(1)))));
    const holed = { ...two, accepted: two.accepted.slice(1) };
    expect(() => parseAcceptanceState(JSON.stringify(holed))).toThrow();
  });
});

describe('trust rotation', () => {
  const overlap = replaceTrust(baseTrust, { current: v1, next: v2, revocationEpoch: 1 });

  it('verifies both current and next during the overlap', () => {
    const s1 = accepted(verify(sign(1), undefined, overlap));
    expect(verify(sign(2, {}, 2, control.v2.privateKey), s1, overlap).verdict).toBe('accepted');
  });

  it('retires the old current on replacement: its envelopes refuse, the new current verifies', () => {
    const rotated = replaceTrust(overlap, { current: v2, next: v3, revocationEpoch: 1 });
    expect(rotated.retiredVersions).toEqual([1]);
    expect(refusal(verify(sign(1), undefined, rotated))).toBe('key-unknown');
    expect(verify(sign(1, {}, 2, control.v2.privateKey), undefined, rotated).verdict).toBe('accepted');
    expect(verify(sign(1, {}, 3, control.v3.privateKey), undefined, rotated).verdict).toBe('accepted');
    expect(overlap.current.version).toBe(1);
    expect(Object.isFrozen(rotated) && Object.isFrozen(rotated.current)).toBe(true);
  });

  const rotated = replaceTrust(overlap, { current: v2, next: v3, revocationEpoch: 2 });
  const fourth = { ...v3, version: 4, publicKey: fresh };
  it.each([
    ['next moves on to a fresh version', 'ok', { current: v2, next: fourth }],
    ['a retired version is reused', 'refused', { current: v2, next: { ...v3, version: 1 } }],
    ['the current version goes backwards', 'refused', { current: v1, next: null }],
    ['next is not above current', 'refused', { current: v3, next: { ...v2, version: 3 } }],
    [
      'a kept version changes its key',
      'refused',
      { current: { ...v2, publicKey: rogue.publicKey }, next: v3 },
    ],
    ['a key is not Ed25519 public', 'refused', { current: { ...v2, publicKey: rogue.privateKey }, next: v3 }],
    ['validity is inverted', 'refused', { current: v2, next: { ...v3, notAfter: v3.notBefore } }],
  ] as const)('replacement when %s: %s', (_name, outcome, keys) => {
    const replace = () => replaceTrust(rotated, { ...keys, revocationEpoch: 2 });
    if (outcome === 'ok') expect(replace().next?.version).toBe(4);
    else expect(replace).toThrow(TrustReplacementError);
    expect(rotated.next?.version).toBe(3);
  });

  it('refuses an epoch that goes backwards, leaving the old trust whole', () => {
    expect(() => replaceTrust(rotated, { current: v2, next: v3, revocationEpoch: 1 })).toThrow(
      expect.objectContaining({ code: 'trust-replacement-refused' }),
    );
    expect(rotated.revocationEpoch).toBe(2);
  });
});

describe('host results', () => {
  const envelope = sign(1);
  const digest = accepted(verify(envelope)).accepted[0]!.envelopeDigest;
  const expectation = { hostId: HOST, operationId: 'op-1', envelopeDigest: digest };
  const hostKeys = [{ hostId: HOST, version: 1, publicKey: hostKey.publicKey }];
  const good = resultFor(envelope, digest, ['a', 'b', 'c']);

  /** A host that signs what it should not: the body changed, then signed again with its real key. */
  function resigned(mutate: (body: HostResultBody) => void): HostResultWire {
    const body = overWire(good.body) as HostResultBody;
    mutate(body);
    return { body, signature: signCanonical(body, hostKey.privateKey), keyVersion: 1 };
  }
  const code = (wire: unknown, keys = hostKeys, expect_ = expectation) => {
    const verdict = verifyHostResult(overWire(wire), keys, expect_);
    return verdict.ok ? 'ok' : verdict.code;
  };

  it('verifies a signed result with ordered chunks and matching integrity headers', () => {
    expect(code(good)).toBe('ok');
    expect(good.body.integrity.stdout.chunks).toBe(3);
    expect(good.body.streams.stdout.map((c) => Buffer.from(c.data, 'base64url').toString())).toEqual([
      'a',
      'b',
      'c',
    ]);
  });

  it.each([
    [
      'altered outcome',
      () => ({ ...good, body: { ...good.body, outcome: { ...good.body.outcome, status: 'failed' } } }),
      'result-signature-invalid',
    ],
    [
      'a rogue host key',
      () => ({ ...good, signature: signCanonical(good.body, rogue.privateKey) }),
      'result-signature-invalid',
    ],
    [
      'an unknown host key version',
      () => ({ ...good, keyVersion: 2, body: { ...good.body, hostKeyVersion: 2 } }),
      'result-key-unknown',
    ],
    ['an unknown member', () => ({ ...good, extra: 1 }), 'result-malformed'],
    ['swapped chunks', () => resigned((b) => b.streams.stdout.reverse()), 'chunk-out-of-order'],
    ['altered chunk data', () => resigned((b) => (b.streams.stdout[1]!.data = 'eA')), 'chunk-chain-broken'],
    ['a dropped last chunk', () => resigned((b) => b.streams.stdout.pop()), 'chunk-chain-broken'],
    [
      'a stderr chain pasted into stdout',
      () => resigned((b) => (b.streams.stdout = b.streams.stderr)),
      'chunk-chain-broken',
    ],
  ] as const)('refuses %s', (_name, make, expected) => {
    expect(code(make())).toBe(expected);
  });

  it('refuses a result bound to another assignment', () => {
    expect(code(good, hostKeys, { ...expectation, envelopeDigest: 'e'.repeat(64) })).toBe(
      'result-binding-mismatch',
    );
    expect(code(good, hostKeys, { ...expectation, operationId: 'op-2' })).toBe('result-binding-mismatch');
  });

  it('checks chunks one by one as they arrive', () => {
    let sent = startChain('stdout', digest);
    const chunks = ['x', 'y', 'z'].map((s) => {
      const next = appendChunk(sent, Buffer.from(s));
      sent = next.chain;
      return next.chunk;
    });
    const receive = (order: number[], start = startChain('stdout', digest)) => {
      let chain = start;
      for (const i of order) {
        const verdict = acceptChunk(chain, chunks[i]!);
        if (!verdict.ok) return verdict.error.code;
        chain = verdict.chain;
      }
      return chain.headSha256 === sent.headSha256 ? 'ok' : 'short';
    };
    expect(receive([0, 1, 2])).toBe('ok');
    expect(receive([0, 2])).toBe('chunk-out-of-order');
    expect(receive([0, 1, 2], startChain('stderr', digest))).toBe('chunk-chain-broken');
    expect(receive([0], startChain('stdout', 'd'.repeat(64)))).toBe('chunk-chain-broken');
  });
});
