// The reference host's durable core over a real journal directory: an in-memory control plane
// serves envelopes signed with a test control key and records what the host reports. Covers the
// simulated effects and their signed results, exact lost-ack replay (also across a host restart),
// a crash between intent and result (quarantine, no second effect, operator cleanup, then
// reassignment), a torn journal tail, envelope refusals that are never journaled, declined
// envelopes answered with signed refusals (expired, stale fence, quarantined lease), the journal
// directory lock, the poll loop's abort and bounded retry, and the declared guest's configured
// signal in the signed describe. The effects are local records: nothing here runs a guest.
import { generateKeyPairSync } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { ControlUnavailableError } from '../../providers/sandbox-host/control-errors.ts';
import {
  envelopeDigest,
  type EnvelopeInput,
  type EnvelopeWire,
  signEnvelope,
} from '../../providers/sandbox-host/envelope.ts';
import {
  createLocalRecordEffects,
  type HostEffects,
  leaseKey,
} from '../../providers/sandbox-host/host-effects.ts';
import {
  createReferenceGuest,
  guestReportsDir,
  reportGuestConfigured,
} from '../../providers/sandbox-host/host-guest.ts';
import {
  CleanupRefusedError,
  ControlRetriesExhaustedError,
  HostJournalCorruptError,
  HostJournalLockedError,
} from '../../providers/sandbox-host/host-errors.ts';
import { JOURNAL_FILE, LOCK_FILE } from '../../providers/sandbox-host/host-journal.ts';
import { type HostResultWire, verifyHostResult } from '../../providers/sandbox-host/host-result.ts';
import { type ControlPort, ReferenceHost } from '../../providers/sandbox-host/reference-host.ts';
import { createTrust } from '../../providers/sandbox-host/trust.ts';
import { envelopeInput, provisionSpec, T0, verificationKey } from '../support/sandbox-host-envelopes.ts';

const HOST = 'host-ref-1';
const control = generateKeyPairSync('ed25519');
const rogue = generateKeyPairSync('ed25519');
const hostKey = generateKeyPairSync('ed25519');
const trust = createTrust({ current: verificationKey(1, control.publicKey), next: null, revocationEpoch: 1 });
const hostKeys = [{ hostId: HOST, version: 1, publicKey: hostKey.publicKey }];
const now = () => new Date(T0.getTime() + 1_000);

const fixture = {
  hostId: HOST,
  effectiveSpec: provisionSpec(),
  capabilitySnapshot: { capabilities: ['process'] },
  leaseOperationId: 'lease-op-1',
  expiresAt: new Date(T0.getTime() + 3_600_000),
};
const input = (sequence: number, overrides: Partial<EnvelopeInput> = {}): EnvelopeInput =>
  envelopeInput(fixture, sequence, overrides);
const sign = (sequence: number, overrides: Partial<EnvelopeInput> = {}, key = control.privateKey) =>
  signEnvelope(input(sequence, overrides), { version: 1, privateKey: key });
type Kind = 'provision' | 'renew' | 'describe' | 'release' | 'listOwned';
const SPECS: Record<Kind, Record<string, unknown>> = {
  provision: provisionSpec(),
  renew: { expiresAt: '2026-12-02T12:00:00.000Z' },
  describe: {},
  release: {},
  listOwned: { ownerHash: 'a'.repeat(40), providerFence: 3 },
};
/** Overrides for an envelope of kind `k` at `sequence`, carrying that kind's spec unless given. */
const kind = (k: Kind, sequence: number, spec?: Record<string, unknown>): Partial<EnvelopeInput> => ({
  operation: { id: `op-${sequence}`, kind: k },
  effectiveSpec: spec ?? SPECS[k],
});
const docOf = (wire: HostResultWire | undefined) => wire?.body.outcome;

/** The control plane in memory: serves unacknowledged and newer envelopes, records reports. */
class MemoryControl implements ControlPort {
  readonly queue: EnvelopeWire[] = [];
  readonly reports: HostResultWire[] = [];
  readonly acked = new Set<string>();
  /** Served on the next fetch only (envelopes the host should refuse). */
  inject: unknown[] = [];
  loseReports = 0;
  failFetches = 0;
  failWith: Error | null = null;
  fetchCalls = 0;

  fetchAssignments(after: number): Promise<readonly unknown[]> {
    this.fetchCalls++;
    if (this.failWith !== null) return Promise.reject(this.failWith);
    if (this.failFetches > 0) {
      this.failFetches--;
      return Promise.reject(new ControlUnavailableError('connection refused'));
    }
    const served = [
      ...this.queue.filter((w) => w.body.sequence > after || !this.acked.has(envelopeDigest(w))),
      ...this.inject,
    ];
    this.inject = [];
    return Promise.resolve(JSON.parse(JSON.stringify(served)) as unknown[]);
  }

  reportResult(wire: HostResultWire): Promise<void> {
    if (this.loseReports > 0) {
      this.loseReports--; // the host saw success; the control plane lost it before persisting
      return Promise.resolve();
    }
    this.reports.push(wire);
    this.acked.add(wire.body.envelopeDigest);
    return Promise.resolve();
  }

  /** A control-plane restart that forgot an acknowledgment: it will send the envelope again. */
  forget(wire: EnvelopeWire): void {
    this.acked.delete(envelopeDigest(wire));
  }
}

/** The simulated effects, counted, so a second effect would show. */
function counted(dir: string) {
  const inner = createLocalRecordEffects(join(dir, 'sandboxes'), now);
  const calls = { provision: 0, renew: 0, describe: 0, release: 0, listOwned: 0 };
  const effects: HostEffects = {
    provision: (b) => {
      calls.provision++;
      return inner.provision(b);
    },
    renew: (b) => {
      calls.renew++;
      return inner.renew(b);
    },
    describe: (b) => {
      calls.describe++;
      return inner.describe(b);
    },
    release: (b) => {
      calls.release++;
      return inner.release(b);
    },
    listOwned: (b) => {
      calls.listOwned++;
      return inner.listOwned(b);
    },
  };
  return { effects, calls };
}

let dir: string;
let ctl: MemoryControl;
const hosts: ReferenceHost[] = [];
const signal = () => new AbortController().signal;

async function openHost(
  effects: HostEffects,
  faults?: { afterIntent?: (sequence: number) => void },
): Promise<ReferenceHost> {
  const host = await ReferenceHost.open({
    hostId: HOST,
    journalDir: join(dir, 'journal'),
    trust,
    signer: { hostId: HOST, version: 1, privateKey: hostKey.privateKey },
    control: ctl,
    effects,
    now,
    ...(faults === undefined ? {} : { faults }),
  });
  hosts.push(host);
  return host;
}

async function journalLines(): Promise<{ type: string }[]> {
  const text = await readFile(join(dir, 'journal', JOURNAL_FILE), 'utf8');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { type: string });
}
const countType = async (type: string) => (await journalLines()).filter((e) => e.type === type).length;

function verified(wire: HostResultWire, envelope: EnvelopeWire) {
  const verdict = verifyHostResult(wire, hostKeys, {
    hostId: HOST,
    operationId: envelope.body.operation.id,
    envelopeDigest: envelopeDigest(envelope),
  });
  expect(verdict.ok).toBe(true);
  return wire.body;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sandlot-ref-host-'));
  ctl = new MemoryControl();
});

afterEach(async () => {
  for (const host of hosts.splice(0)) await host.close().catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});

describe('reference host effects', () => {
  it('provisions, describes, lists and releases, each answered with a verifiable signed result', async () => {
    const { effects, calls } = counted(dir);
    const host = await openHost(effects);
    const envelopes = [
      sign(1),
      sign(2, kind('describe', 2)),
      sign(3, kind('listOwned', 3)),
      sign(4, kind('release', 4)),
      sign(5, kind('describe', 5)),
    ];
    ctl.queue.push(...envelopes);
    const report = await host.step(signal());
    expect(report).toMatchObject({ fetched: 5, accepted: 5, refused: 0, reported: 5 });
    expect(calls).toEqual({ provision: 1, renew: 0, describe: 2, release: 1, listOwned: 1 });
    const bodies = ctl.reports.map((r, i) => verified(r, envelopes[i] as EnvelopeWire));
    expect(bodies.map((b) => b.outcome.status)).toEqual(Array(5).fill('succeeded'));
    expect(bodies[0]?.outcome.document).toEqual({
      created: true,
      sandbox: {
        key: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown,
        owner: provisionSpec().owner,
        expiresAt: null,
        tenantId: 'tenant-1',
        specSha256: envelopes[0]?.body.effectiveSpec.sha256,
        provisionedBy: 'op-1',
        createdAt: now().toISOString(),
      },
    });
    expect(bodies[1]?.outcome.document).toMatchObject({ found: true });
    expect(bodies[2]?.outcome.document).toMatchObject({
      sandboxes: [{ owner: { operationId: 'lease-op-1' } }],
      uncertain: [],
    });
    expect(bodies[3]?.outcome.document).toEqual({ released: true, absent: false });
    expect(bodies[4]?.outcome.document).toEqual({ found: false });
    const stdout = bodies[0]?.streams.stdout.map((c) => Buffer.from(c.data, 'base64url').toString()) ?? [];
    expect(stdout.join('')).toContain('no guest was started');
    expect(bodies[0]?.integrity.stdout.chunks).toBe(2);
    expect((await journalLines()).map((e) => e.type)).toEqual(
      Array<string[]>(5).fill(['accepted', 'intent', 'result']).flat(),
    );
    expect(host.health().lastHealthyPoll).toBeNull();
    expect(await host.step(signal())).toMatchObject({ fetched: 0 });
    expect(host.health().lastHealthyPoll).toBe(now().toISOString());
  });
});

describe('the declared guest in the signed describe', () => {
  const sandboxes = () => join(dir, 'sandboxes');
  const key = () => leaseKey('env-1', 'lease-op-1');
  const reportFile = () => join(guestReportsDir(sandboxes()), `${key()}.json`);
  const textOf = (chunks: readonly { data: string }[] | undefined) =>
    (chunks ?? []).map((c) => Buffer.from(c.data, 'base64url').toString()).join('');
  /** Runs the envelopes on `host` and answers their verified result bodies, in order. */
  async function answers(host: ReferenceHost, ...envelopes: EnvelopeWire[]) {
    const from = ctl.reports.length;
    ctl.queue.push(...envelopes);
    await host.step(signal());
    return ctl.reports.slice(from).map((r, i) => verified(r, envelopes[i] as EnvelopeWire));
  }

  it('an on-report guest: started until the guest reports, then configured; release removes the report', async () => {
    const host = await openHost(counted(dir).effects);
    const [, before] = await answers(host, sign(1), sign(2, kind('describe', 2)));
    expect(before?.outcome.document).toMatchObject({ found: true, guest: { phase: 'started' } });

    const report = await reportGuestConfigured(sandboxes(), { key: key(), provisionedBy: 'op-1' }, now());
    const [after] = await answers(host, sign(3, kind('describe', 3)));
    expect(after?.outcome.document).toMatchObject({
      found: true,
      sandbox: { key: key(), provisionedBy: 'op-1' },
      guest: { phase: 'configured', configuredAt: report.configuredAt },
    });
    expect(textOf(after?.streams.stdout)).toContain('guest configured');

    const [released, gone] = await answers(host, sign(4, kind('release', 4)), sign(5, kind('describe', 5)));
    expect(released?.outcome.document).toEqual({ released: true, absent: false });
    expect(gone?.outcome.document).toEqual({ found: false });
    await expect(readFile(reportFile(), 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('an at-start guest reports configured as soon as its sandbox is recorded', async () => {
    const guest = createReferenceGuest(sandboxes(), 'at-start', now);
    const host = await openHost(createLocalRecordEffects(sandboxes(), now, guest));
    const [, described] = await answers(host, sign(1), sign(2, kind('describe', 2)));
    expect(described?.outcome.document).toMatchObject({
      guest: { phase: 'configured', configuredAt: now().toISOString() },
    });
    expect(JSON.parse(await readFile(reportFile(), 'utf8'))).toEqual({
      key: key(),
      provisionedBy: 'op-1',
      phase: 'configured',
      configuredAt: now().toISOString(),
    });
  });

  it('a report for another provision, or one that is not a report, leaves the sandbox started', async () => {
    const host = await openHost(counted(dir).effects);
    await answers(host, sign(1));
    await reportGuestConfigured(sandboxes(), { key: key(), provisionedBy: 'op-9' }, now());
    const [foreign] = await answers(host, sign(2, kind('describe', 2)));
    expect(foreign?.outcome.document).toMatchObject({ guest: { phase: 'started' } });
    expect(textOf(foreign?.streams.stderr)).toContain('names another sandbox or provision');

    await writeFile(reportFile(), JSON.stringify({ key: key(), provisionedBy: 'op-1', phase: 'ready' }));
    const [invalid] = await answers(host, sign(3, kind('describe', 3)));
    expect(invalid?.outcome.document).toMatchObject({ guest: { phase: 'started' } });
    expect(textOf(invalid?.streams.stderr)).toContain('not a guest report');
  });
});

describe('exact replay', () => {
  it('re-reports the saved result after a lost ack, with no second effect, also after a restart', async () => {
    const { effects, calls } = counted(dir);
    const host = await openHost(effects);
    const envelope = sign(1);
    ctl.queue.push(envelope);
    ctl.loseReports = 1;
    await host.step(signal());
    expect(ctl.reports).toHaveLength(0);
    const saved = host.state.accepted[0]?.result;
    expect(saved).not.toBeNull();

    expect(await host.step(signal())).toMatchObject({ fetched: 1, replayed: 1, accepted: 0, reported: 1 });
    expect(canonicalJson(ctl.reports[0])).toBe(canonicalJson(saved));
    expect(calls.provision).toBe(1);

    await host.close();
    ctl.forget(envelope);
    const restarted = counted(dir);
    const again = await openHost(restarted.effects);
    expect(await again.step(signal())).toMatchObject({ replayed: 1, accepted: 0 });
    expect(canonicalJson(ctl.reports[1])).toBe(canonicalJson(saved));
    expect(restarted.calls.provision).toBe(0);
    expect(await countType('accepted')).toBe(1);
  });
});

describe('crash between intent and result', () => {
  it('quarantines as uncertain, never runs the effect again, and reassigns after operator cleanup', async () => {
    const first = counted(dir);
    const crashing = await openHost(first.effects, {
      afterIntent: () => {
        throw new Error('simulated crash after the intent was journaled');
      },
    });
    const envelope = sign(1);
    ctl.queue.push(envelope);
    await expect(crashing.step(signal())).rejects.toThrow(/simulated crash/);
    expect(await countType('intent')).toBe(1);
    expect(ctl.reports).toHaveLength(0);
    await crashing.close();

    const second = counted(dir);
    const host = await openHost(second.effects);
    expect(host.quarantines).toMatchObject([{ operationId: 'op-1', environmentId: 'env-1', sequence: 1 }]);
    await host.step(signal());
    const uncertain = verified(ctl.reports[0] as HostResultWire, envelope);
    expect(uncertain.outcome).toMatchObject({ status: 'uncertain', document: { code: 'quarantined' } });
    expect(first.calls.provision + second.calls.provision).toBe(0);

    // A new envelope for the same Environment is declined: a signed refusal consumes its sequence.
    const lease2 = { environmentId: 'env-1', operationId: 'lease-op-2', resourceGeneration: 2 };
    const spec2 = provisionSpec({ operationId: 'lease-op-2', resourceGeneration: 2, providerFence: 4 });
    const held = sign(2, { lease: lease2, fence: { providerFence: 4 }, effectiveSpec: spec2 });
    ctl.queue.push(held);
    expect(await host.step(signal())).toMatchObject({ declined: 1, refused: 0, accepted: 0, reported: 1 });
    expect(verified(ctl.reports.at(-1) as HostResultWire, held).outcome).toMatchObject({
      status: 'failed',
      document: { code: 'refused', refusal: 'lease-quarantined' },
    });
    expect(await host.step(signal())).toMatchObject({ fetched: 0 });
    expect(host.state.lastSequence).toBe(2);
    expect(await countType('intent')).toBe(1);

    await expect(host.confirmCleanup('op-unknown', 'operator:bob')).rejects.toThrow(CleanupRefusedError);
    await expect(host.confirmCleanup('op-1', ' ')).rejects.toThrow(CleanupRefusedError);
    await host.confirmCleanup('op-1', 'operator:bob');
    expect((await journalLines()).at(-1)).toMatchObject({
      type: 'cleanup',
      operationId: 'op-1',
      operator: 'operator:bob',
      at: now().toISOString(),
    });
    const reassign = sign(3, { lease: lease2, fence: { providerFence: 4 }, effectiveSpec: spec2 });
    ctl.queue.push(reassign);
    expect(await host.step(signal())).toMatchObject({ accepted: 1, refused: 0 });
    expect(verified(ctl.reports.at(-1) as HostResultWire, reassign).outcome.status).toBe('succeeded');
    expect(second.calls.provision).toBe(1);

    // The cleanup is durable: a restart does not bring the quarantine back.
    await host.close();
    const reopened = await openHost(counted(dir).effects);
    expect(reopened.quarantines).toEqual([]);
    expect(reopened.state.lastSequence).toBe(3);
  });

  it('answers a read interrupted by a crash or a throw as interrupted-read, holding nothing', async () => {
    const describeOf = (sequence: number, id: string) =>
      sign(sequence, { operation: { id, kind: 'describe' }, effectiveSpec: {} });
    const crashing = await openHost(counted(dir).effects, {
      afterIntent: () => {
        throw new Error('simulated crash after the intent was journaled');
      },
    });
    const read = describeOf(1, 'read-1');
    ctl.queue.push(read);
    await expect(crashing.step(signal())).rejects.toThrow(/simulated crash/);
    await crashing.close();

    // A read changed nothing: after the restart it is answered, certain, and nothing is quarantined.
    const { effects } = counted(dir);
    const failing: HostEffects = {
      ...effects,
      describe: () => Promise.reject(new Error('disk went away mid-read')),
    };
    const host = await openHost(failing);
    expect(host.quarantines).toEqual([]);
    await host.step(signal());
    expect(verified(ctl.reports[0] as HostResultWire, read).outcome).toEqual({
      status: 'failed',
      document: { code: 'interrupted-read' },
    });
    // A read whose effect throws is answered the same way, and the Environment is not held.
    const second = describeOf(2, 'read-2');
    ctl.queue.push(second);
    await host.step(signal());
    expect(verified(ctl.reports.at(-1) as HostResultWire, second).outcome.document).toEqual({
      code: 'interrupted-read',
    });
    expect(host.quarantines).toEqual([]);
    ctl.queue.push(sign(3));
    expect(await host.step(signal())).toMatchObject({ accepted: 1, declined: 0 });
  });

  it('quarantines an effect that throws part-way, and the quarantine survives a restart', async () => {
    const { effects, calls } = counted(dir);
    const failing: HostEffects = {
      ...effects,
      provision: async (b) => {
        await effects.provision(b);
        throw new Error('lost the host mid-effect');
      },
    };
    const host = await openHost(failing);
    ctl.queue.push(sign(1));
    await host.step(signal());
    expect(ctl.reports[0]?.body.outcome).toMatchObject({
      status: 'uncertain',
      document: { reason: 'effect-failed' },
    });
    expect(calls.provision).toBe(1);
    await host.close();
    const reopened = await openHost(counted(dir).effects);
    expect(reopened.quarantines).toMatchObject([{ operationId: 'op-1' }]);
  });
});

describe('journal durability', () => {
  it('drops a torn trailing line and continues; a malformed complete line refuses to start', async () => {
    const { effects } = counted(dir);
    const host = await openHost(effects);
    ctl.queue.push(sign(1));
    await host.step(signal());
    await host.close();
    const path = join(dir, 'journal', JOURNAL_FILE);
    await appendFile(path, '{"type":"intent","at":"2026-12-');

    const reopened = await openHost(counted(dir).effects);
    expect(reopened.tornBytesDropped).toBeGreaterThan(0);
    expect(reopened.state.lastSequence).toBe(1);
    ctl.queue.push(sign(2, kind('describe', 2)));
    expect(await reopened.step(signal())).toMatchObject({ accepted: 1 });
    expect(await journalLines()).toHaveLength(6);
    await reopened.close();

    const lines = (await readFile(path, 'utf8')).split('\n');
    lines.splice(2, 0, '{"type":"nonsense"}');
    await writeFile(path, lines.join('\n'));
    await expect(openHost(counted(dir).effects)).rejects.toThrow(HostJournalCorruptError);
  });
});

describe('refused envelopes are never journaled as accepted', () => {
  it('refuses altered duplicate, sequence gap, rogue key and another host, consuming nothing', async () => {
    const { effects, calls } = counted(dir);
    const host = await openHost(effects);
    ctl.queue.push(sign(1));
    await host.step(signal());
    const cases: [string, EnvelopeWire, string][] = [
      ['altered duplicate', sign(1, { effectiveSpec: { image: 'sandbox:2' } }), 'altered-duplicate'],
      ['sequence gap', sign(3), 'sequence-gap'],
      ['rogue key', sign(2, {}, rogue.privateKey), 'signature-invalid'],
      ['expired and out of sequence', sign(3, { expiresAt: new Date(T0.getTime() + 500) }), 'sequence-gap'],
      ['another host', sign(2, { hostId: 'host-other' }), 'wrong-host'],
    ];
    for (const [name, wire, code] of cases) {
      ctl.inject = [wire];
      expect(await host.step(signal()), name).toMatchObject({ refused: 1, accepted: 0 });
      expect(host.refusals.at(-1), name).toMatchObject({ code });
      expect(host.state.lastSequence, name).toBe(1);
    }
    expect(await countType('accepted')).toBe(1);
    expect(calls.provision).toBe(1);
    expect(ctl.reports).toHaveLength(1);
  });
});

describe('declined envelopes are answered with a signed refusal and consume the sequence', () => {
  const refusalOf = (wire: HostResultWire | undefined, envelope: EnvelopeWire) =>
    verified(wire as HostResultWire, envelope).outcome;

  it('answers an expired envelope, proceeds with the next, and replays the refusal after a restart', async () => {
    const { effects, calls } = counted(dir);
    const host = await openHost(effects);
    const late = sign(2, { expiresAt: new Date(T0.getTime() + 500) });
    ctl.queue.push(sign(1), late, sign(3, kind('describe', 3)));
    expect(await host.step(signal())).toMatchObject({ accepted: 2, declined: 1, refused: 0, reported: 3 });
    expect(refusalOf(ctl.reports[1], late)).toEqual({
      status: 'failed',
      document: {
        code: 'refused',
        refusal: 'expired',
        message: 'assignment envelope refused (expired): expiresAt has passed',
      },
    });
    expect(ctl.reports[1]?.body.streams).toEqual({ stdout: [], stderr: [] });
    expect(calls).toMatchObject({ provision: 1, describe: 1 });
    const lines = await journalLines();
    expect(lines.map((e) => e.type)).toEqual(
      ['accepted', 'intent', 'result', 'accepted', 'result'].concat(['accepted', 'intent', 'result']),
    );
    expect(lines[3]).toMatchObject({ sequence: 2, declined: { code: 'expired' } });
    const saved = ctl.reports[1];

    await host.close();
    ctl.forget(late);
    const again = await openHost(counted(dir).effects);
    expect(again.state.lastSequence).toBe(3);
    expect(await again.step(signal())).toMatchObject({ replayed: 1, accepted: 0, declined: 0 });
    expect(canonicalJson(ctl.reports.at(-1))).toBe(canonicalJson(saved));
  });

  it('answers a stale fence; a describe with a higher fence locks nothing out', async () => {
    const { effects, calls } = counted(dir);
    const host = await openHost(effects);
    const stale = sign(3, { fence: { providerFence: 2 } });
    ctl.queue.push(
      sign(1),
      sign(2, { ...kind('describe', 2), fence: { providerFence: 9 } }),
      stale,
      sign(4, kind('renew', 4)),
    );
    expect(await host.step(signal())).toMatchObject({ accepted: 3, declined: 1, refused: 0 });
    expect(refusalOf(ctl.reports[2], stale)).toMatchObject({
      status: 'failed',
      document: { code: 'refused', refusal: 'stale-fence' },
    });
    expect(ctl.reports[3]?.body.outcome).toMatchObject({
      status: 'succeeded',
      document: { sandbox: { expiresAt: '2026-12-02T12:00:00.000Z' } },
    });
    expect(host.state.fences).toEqual([{ environmentId: 'env-1', providerFence: 3 }]);
    expect(calls).toMatchObject({ provision: 1, describe: 1, renew: 1 });
  });

  it('answers a declined acceptance whose result was lost in a crash with the same refusal', async () => {
    const host = await openHost(counted(dir).effects);
    ctl.queue.push(sign(1, { expiresAt: new Date(T0.getTime() + 500) }));
    await host.step(signal());
    await host.close();
    const path = join(dir, 'journal', JOURNAL_FILE);
    const lines = (await readFile(path, 'utf8')).split('\n').filter((l) => l !== '');
    await writeFile(path, `${lines[0]}\n`);
    ctl.reports.length = 0;
    const reopened = await openHost(counted(dir).effects);
    await reopened.step(signal());
    expect(ctl.reports[0]?.body.outcome.document).toMatchObject({ code: 'refused', refusal: 'expired' });
    expect((await journalLines()).map((e) => e.type)).toEqual(['accepted', 'result']);
  });
});

describe('effects keyed by lease', () => {
  it('renews, refuses another owner, reports absence and filters listOwned by owner', async () => {
    const { effects } = counted(dir);
    const host = await openHost(effects);
    const other = provisionSpec({ runId: 'run-2' });
    const lease2 = { environmentId: 'env-1', operationId: 'lease-op-2', resourceGeneration: 1 };
    const owner2 = provisionSpec({ operationId: 'lease-op-2', ownerHash: 'b'.repeat(40) });
    ctl.queue.push(
      sign(1, kind('renew', 1)),
      sign(2),
      sign(3, kind('renew', 3)),
      sign(4, kind('renew', 4)),
      sign(5, kind('provision', 5, other)),
      sign(6, { ...kind('provision', 6, owner2), lease: lease2 }),
      sign(7, kind('listOwned', 7)),
      sign(8, kind('listOwned', 8, { ownerHash: 'a'.repeat(40), providerFence: 3, operationId: 'x' })),
      sign(9, kind('provision', 9, { image: 'sandbox:1' })),
    );
    expect(await host.step(signal())).toMatchObject({ accepted: 9, reported: 9 });
    const outcomes = ctl.reports.map((r) => r.body.outcome);
    expect(outcomes[0]).toEqual({ status: 'failed', document: { code: 'absent' } });
    expect(outcomes[2]).toMatchObject({ status: 'succeeded', document: { sandbox: SPECS.renew } });
    expect(canonicalJson(outcomes[3])).toBe(canonicalJson(outcomes[2]));
    expect(outcomes[4]).toEqual({ status: 'failed', document: { code: 'owner-mismatch' } });
    expect(outcomes[5]).toMatchObject({ status: 'succeeded', document: { created: true } });
    expect(outcomes[6]?.document).toMatchObject({
      sandboxes: [{ owner: { runId: 'run-1', operationId: 'lease-op-1' }, expiresAt: SPECS.renew.expiresAt }],
      uncertain: [],
    });
    expect((outcomes[6]?.document.sandboxes as unknown[]).length).toBe(1);
    expect(outcomes[7]?.document).toEqual({ sandboxes: [], uncertain: [] });
    expect(docOf(ctl.reports[8])).toMatchObject({ status: 'failed', document: { code: 'spec-invalid' } });
  });
});

describe('journal directory lock', () => {
  it('refuses a second open while held, and takes over a lock whose process is gone', async () => {
    const host = await openHost(counted(dir).effects);
    await expect(openHost(counted(dir).effects)).rejects.toThrow(HostJournalLockedError);
    await host.close();
    const lock = join(dir, 'journal', LOCK_FILE);
    await expect(readFile(lock)).rejects.toMatchObject({ code: 'ENOENT' });

    await writeFile(lock, `${process.ppid}\n`);
    await expect(openHost(counted(dir).effects)).rejects.toThrow(/locked by running process/);
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    await writeFile(lock, `${dead}\n`);
    const taken = await openHost(counted(dir).effects);
    expect(await readFile(lock, 'utf8')).toBe(`${process.pid}\n`);
    await taken.close();
  });
});

describe('poll loop', () => {
  const waitFor = async (check: () => boolean) => {
    for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
    expect(check()).toBe(true);
  };

  it('observes a healthy verified no-work poll and stops when aborted', async () => {
    const host = await openHost(counted(dir).effects);
    const stop = new AbortController();
    const running = host.run(stop.signal, { intervalMs: 5 });
    await waitFor(() => ctl.fetchCalls >= 3);
    expect(host.health().lastHealthyPoll).not.toBeNull();
    stop.abort();
    await expect(running).resolves.toBeUndefined();
    const calls = ctl.fetchCalls;
    await new Promise((r) => setTimeout(r, 30));
    expect(ctl.fetchCalls).toBe(calls);
  });

  it('retries transient control errors a bounded number of times, then gives up', async () => {
    const host = await openHost(counted(dir).effects);
    ctl.failFetches = 2;
    ctl.queue.push(sign(1));
    const stop = new AbortController();
    const running = host.run(stop.signal, { intervalMs: 5, attempts: 3, initialBackoffMs: 1 });
    await waitFor(() => ctl.reports.length === 1);
    stop.abort();
    await running;
    expect(host.health().lastPollError).toBeNull();

    ctl.failFetches = Number.POSITIVE_INFINITY;
    const before = ctl.fetchCalls;
    await expect(host.run(signal(), { intervalMs: 5, attempts: 3, initialBackoffMs: 1 })).rejects.toThrow(
      ControlRetriesExhaustedError,
    );
    expect(ctl.fetchCalls - before).toBe(3);
    expect(host.health().lastPollError).toMatchObject({ code: 'host-control-unavailable' });
  });

  it('does not retry an error that is not transient', async () => {
    const host = await openHost(counted(dir).effects);
    ctl.failWith = new Error('refused by the control plane');
    await expect(host.run(signal(), { intervalMs: 5, attempts: 3 })).rejects.toThrow(/refused/);
    expect(ctl.fetchCalls).toBe(1);
  });
});
