// The bounded exec exchange with a fixed helper container (providers/agent-sandbox/pod-exchange.ts)
// against the fake Kubernetes API over real TLS: the identity is checked before any payload byte,
// a 64 MiB seed arrives intact, and every refusal or loss comes back classified.
import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_PAYLOAD_BYTES,
  DEFAULT_MAX_RESPONSE_BYTES,
  exchangeExitCode,
  exchangeWithContainer,
  type PodExchangeOptions,
  type PodExchangeRequest,
  type StreamedPayload,
} from '../../providers/agent-sandbox/pod-exchange.ts';
import { ProviderError } from '../../providers/errors.ts';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import { kubeClients, type KubeClients } from '../fakes/kube-api/clients.ts';
import {
  EXEC_ANNOTATIONS,
  digestStdin,
  startFakeKubeApi,
  type FakeKubeApi,
  type KubeObject,
} from '../fakes/kube-api/index.ts';

const ns = 'sandlot';
const MiB = 1024 * 1024;
const fingerprint = createHash('sha256').update('request').digest('hex');
const annotations = {
  [EXEC_ANNOTATIONS.requestFingerprint]: fingerprint,
  [EXEC_ANNOTATIONS.operationId]: 'op-1',
  [EXEC_ANNOTATIONS.checkpointId]: 'cp-1',
  [EXEC_ANNOTATIONS.seedPath]: '/workspace/.sandlot/seed.bundle',
};

let fake: FakeKubeApi;
let k: KubeClients;
let pod: KubeObject;
/** Every error an exchange threw, checked at the end for the bearer token. */
const errors: unknown[] = [];

async function createPod(name: string, withAnnotations: boolean, running = true): Promise<KubeObject> {
  const containers = ['preparation', 'echo-digest', 'flood'].map((c) => ({
    name: c,
    image: `ghcr.io/acme/${c}:1.0`,
    command: [`/sandlot/${c}`],
  }));
  const metadata = withAnnotations ? { name, annotations } : { name };
  await k.core.createNamespacedPod({ namespace: ns, body: { metadata, spec: { containers } } });
  if (running) await fake.controller.settle();
  const stored = fake.objects.get({ apiVersion: 'v1', kind: 'Pod', namespace: ns, name });
  if (!stored) throw new Error(`pod ${name} was not stored`);
  return stored;
}

function within(ms = 15_000, signal = new AbortController().signal): PodExchangeOptions {
  return { signal, deadline: new Date(Date.now() + ms) };
}

function exchangeRequest(payload: PodExchangeRequest['payload'], over: Partial<PodExchangeRequest> = {}) {
  return {
    namespace: ns,
    pod: pod.metadata.name,
    podUid: pod.metadata.uid,
    container: 'preparation',
    command: ['/sandlot/prepare', '--stdin'],
    requestFingerprint: fingerprint,
    payload,
    ...over,
  };
}

/** `length` deterministic bytes in 1 MiB chunks, each different, hashed as they are produced. */
function generated(length: number): { payload: StreamedPayload; sha256: () => string } {
  const hash = createHash('sha256');
  const pattern = Buffer.alloc(MiB, 0);
  for (let i = 0; i < pattern.length; i += 1) pattern[i] = (i * 31 + 7) & 0xff;
  function* chunks(): Generator<Uint8Array> {
    for (let sent = 0, index = 0; sent < length; index += 1) {
      const chunk = Buffer.from(pattern.subarray(0, Math.min(MiB, length - sent)));
      if (chunk.length >= 4) chunk.writeUInt32BE(index, 0);
      hash.update(chunk);
      sent += chunk.length;
      yield chunk;
    }
  }
  return { payload: { length, chunks: chunks() }, sha256: () => hash.digest('hex') };
}

async function failure(call: Promise<unknown>): Promise<ProviderError> {
  try {
    await call;
  } catch (error) {
    errors.push(error);
    expect(error).toBeInstanceOf(ProviderError);
    return error as ProviderError;
  }
  throw new Error('expected the exchange to fail');
}

const lastSession = () => fake.execSessions.at(-1);

/** The latest exec session once the fake saw it end, so its stdin count is final. */
async function endedSession() {
  for (let i = 0; i < 200 && lastSession()?.outcome === 'open'; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return lastSession();
}

beforeAll(async () => {
  fake = await startFakeKubeApi({ namespace: ns, controller: { paused: true } });
  k = kubeClients(fake.kubeconfig());
  pod = await createPod('prepare', true);
});
afterAll(() => fake.close());

describe.skipIf(skipWithoutCrds)('Pod exchange over the exec subresource', () => {
  it('delivers exactly 67,188,876 bytes intact and returns the preparation receipt', async () => {
    const { payload, sha256 } = generated(DEFAULT_MAX_PAYLOAD_BYTES);
    const started = Date.now();
    const result = await exchangeWithContainer(k.config, exchangeRequest(payload), within(20_000));
    const elapsed = Date.now() - started;
    expect(result.status).toEqual({ status: 'Success' });
    expect(result.payloadBytes).toBe(DEFAULT_MAX_PAYLOAD_BYTES);
    expect(JSON.parse(result.stdout.toString('utf8'))).toEqual({
      operationId: 'op-1',
      checkpointId: 'cp-1',
      sourceSha256: sha256(),
      length: DEFAULT_MAX_PAYLOAD_BYTES,
      path: '/workspace/.sandlot/seed.bundle',
      podUid: pod.metadata.uid,
    });
    expect(lastSession()).toMatchObject({ stdinBytes: DEFAULT_MAX_PAYLOAD_BYTES, stdinClosed: true });
    expect(fake.requests.at(-1)).toMatchObject({
      path: `/api/v1/namespaces/${ns}/pods/prepare/exec`,
      query: { container: 'preparation', stdin: 'true', stdout: 'true', stderr: 'true' },
      status: 101,
    });
    console.info(`pod exchange: ${DEFAULT_MAX_PAYLOAD_BYTES} bytes in ${elapsed} ms`);
  });

  it('refuses a payload one byte over the limit before connecting', async () => {
    const before = fake.requests.length;
    const untouched: StreamedPayload = {
      length: DEFAULT_MAX_PAYLOAD_BYTES + 1,
      chunks: {
        [Symbol.iterator]: () => {
          throw new Error('the payload must not be read');
        },
      },
    };
    const over = await failure(exchangeWithContainer(k.config, exchangeRequest(untouched), within()));
    expect(over).toMatchObject({ kind: 'definitive', code: 'exec-payload-too-large' });
    const small = exchangeRequest(new Uint8Array(17));
    const limited = await failure(
      exchangeWithContainer(k.config, small, { ...within(), maxPayloadBytes: 16 }),
    );
    expect(limited).toMatchObject({ kind: 'definitive', code: 'exec-payload-too-large' });
    expect(fake.requests.length).toBe(before);
  });

  it('refuses a helper reporting another Pod UID, having sent no payload byte', async () => {
    fake.execFaults.next({ kind: 'wrong-identity', podUid: 'not-the-pod' });
    const error = await failure(
      exchangeWithContainer(k.config, exchangeRequest(generated(4 * MiB).payload), within()),
    );
    expect(error).toMatchObject({ kind: 'definitive', code: 'exec-identity-mismatch' });
    expect(await endedSession()).toMatchObject({
      fault: 'wrong-identity',
      outcome: 'client-closed',
      stdinBytes: 0,
      stdinClosed: false,
    });
  });

  it('refuses a helper reporting another request fingerprint', async () => {
    const request = exchangeRequest(Buffer.from('seed'), { requestFingerprint: 'f'.repeat(64) });
    const error = await failure(exchangeWithContainer(k.config, request, within()));
    expect(error).toMatchObject({ kind: 'definitive', code: 'exec-identity-mismatch' });
    expect(await endedSession()).toMatchObject({ outcome: 'client-closed', stdinBytes: 0 });
  });

  it('runs the echo-digest helper and keeps its stderr', async () => {
    const seed = Buffer.from('a small seed');
    const request = exchangeRequest(seed, { container: 'echo-digest', command: ['/bin/echo-digest', '-v'] });
    const result = await exchangeWithContainer(k.config, request, within());
    expect(JSON.parse(result.stdout.toString('utf8'))).toEqual({
      sha256: createHash('sha256').update(seed).digest('hex'),
      length: seed.length,
      command: ['/bin/echo-digest', '-v'],
    });
    expect(result.stderr).toBe(`echo-digest: read ${seed.length} bytes\n`);
    expect(result.stderrTruncated).toBe(false);
  });

  it('refuses an answer over maxResponseBytes as uncertain once the payload went out', async () => {
    fake.execHandlers.set('flood', async (context) => {
      await context.identify(fingerprint);
      await digestStdin(context);
      await context.stdout(Buffer.alloc(DEFAULT_MAX_RESPONSE_BYTES + 1, 0x61));
      return 0;
    });
    const error = await failure(
      exchangeWithContainer(k.config, exchangeRequest(Buffer.from('x'), { container: 'flood' }), within()),
    );
    expect(error).toMatchObject({ kind: 'uncertain', code: 'exec-response-too-large' });
  });

  it('hands a streamed answer over chunk by chunk, in order, paused and resumed by its reader', async () => {
    const pieces = Array.from({ length: 16 }, (_, i) => Buffer.alloc(64 * 1024, i));
    fake.execHandlers.set('flood', async (context) => {
      await context.identify(fingerprint);
      await digestStdin(context);
      for (const piece of pieces) await context.stdout(piece);
      return 0;
    });
    const seen: Buffer[] = [];
    let pauses = 0;
    const result = await exchangeWithContainer(
      k.config,
      exchangeRequest(Buffer.from('x'), { container: 'flood' }),
      {
        ...within(),
        maxResponseBytes: 16 * 64 * 1024,
        onStdout: (chunk, flow) => {
          seen.push(chunk);
          // A slow reader: the connection is not read until this chunk is taken.
          flow.pause();
          pauses += 1;
          setImmediate(() => flow.resume());
        },
      },
    );
    expect(result.stdout.length).toBe(0);
    expect(pauses).toBe(seen.length);
    expect(Buffer.concat(seen).equals(Buffer.concat(pieces))).toBe(true);
  });

  it('fails with the exit code of a non-Success status', async () => {
    fake.execFaults.next({ kind: 'exit', exitCode: 3 });
    const error = await failure(
      exchangeWithContainer(k.config, exchangeRequest(Buffer.from('seed')), within()),
    );
    expect(error).toMatchObject({ kind: 'definitive', code: 'exec-exit-status' });
    expect(exchangeExitCode(error)).toBe(3);
    expect(error.message).toContain('exit code 3');
  });

  it('fails definitively when the helper exits before identifying itself', async () => {
    const bare = await createPod('bare', false);
    const request = exchangeRequest(Buffer.from('seed'), { pod: 'bare', podUid: bare.metadata.uid });
    const error = await failure(exchangeWithContainer(k.config, request, within()));
    expect(error).toMatchObject({ kind: 'definitive', code: 'exec-exit-status' });
    expect(exchangeExitCode(error)).toBe(2);
    expect(await endedSession()).toMatchObject({ outcome: 'completed', stdinBytes: 0 });
  });

  it('reports a connection dropped mid-transfer as uncertain', async () => {
    fake.execFaults.next({ kind: 'drop-after-stdin-bytes', bytes: MiB });
    const error = await failure(
      exchangeWithContainer(k.config, exchangeRequest(generated(8 * MiB).payload), within()),
    );
    expect(error).toMatchObject({ kind: 'uncertain', code: 'exec-connection-lost' });
    expect(lastSession()).toMatchObject({ outcome: 'dropped', stdinBytes: MiB, stdinClosed: false });
  });

  it.each(['upgrade', 'identity'] as const)(
    'reports the deadline as uncertain when the helper stalls after %s',
    async (after) => {
      fake.execFaults.next({ kind: 'stall', after });
      const started = Date.now();
      const error = await failure(
        exchangeWithContainer(k.config, exchangeRequest(Buffer.from('seed')), within(600)),
      );
      expect(error).toMatchObject({ kind: 'uncertain', code: 'timeout' });
      expect(Date.now() - started).toBeLessThan(3_000);
    },
  );

  it('reports cancellation by the caller as uncertain', async () => {
    fake.execFaults.next({ kind: 'stall', after: 'identity' });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const error = await failure(
      exchangeWithContainer(
        k.config,
        exchangeRequest(Buffer.from('seed')),
        within(10_000, controller.signal),
      ),
    );
    expect(error).toMatchObject({ kind: 'uncertain', code: 'cancelled' });
  });

  it('refuses a redirect instead of following it', async () => {
    fake.execFaults.next({ kind: 'refuse-upgrade', status: 302, location: 'https://127.0.0.1:1/elsewhere' });
    const error = await failure(
      exchangeWithContainer(k.config, exchangeRequest(Buffer.from('seed')), within()),
    );
    expect(error).toMatchObject({ kind: 'definitive', code: 'exec-upgrade-refused' });
    expect(error.message).toContain('HTTP 302');
  });

  it('refuses exec into a Pod that is not Running, and a wrong bearer token', async () => {
    const pending = await createPod('pending', true, false);
    const request = exchangeRequest(Buffer.from('seed'), { pod: 'pending', podUid: pending.metadata.uid });
    const notRunning = await failure(exchangeWithContainer(k.config, request, within()));
    expect(notRunning).toMatchObject({ kind: 'definitive', code: 'exec-upgrade-refused' });
    expect(notRunning.message).toContain('HTTP 400');

    const stranger = kubeClients(fake.kubeconfig({ token: 'wrong-token-0123456789' }));
    const refused = await failure(
      exchangeWithContainer(stranger.config, exchangeRequest(Buffer.from('seed')), within()),
    );
    expect(refused).toMatchObject({ kind: 'definitive', code: 'exec-upgrade-refused' });
    expect(refused.message).toContain('HTTP 401');
    expect(fake.requests.at(-1)).toMatchObject({ subresource: 'exec', status: 401 });
  });

  it('never shows the bearer token in an error, its message or its cause', () => {
    expect(errors.length).toBeGreaterThanOrEqual(12);
    for (const error of errors) {
      const shown = `${String(error)} ${inspect(error, { depth: 8, showHidden: true })}`;
      expect(shown).not.toContain(fake.token);
      expect(shown).not.toContain('wrong-token-0123456789');
    }
  });
});
