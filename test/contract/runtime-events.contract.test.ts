// The RuntimeEvents port contract over both implementations: the embedded stand-in on its own table
// (PGlite and PostgreSQL), and the HTTP adapter against a stand-in Events server on 127.0.0.1 that
// answers from the same embedded tables, so both are judged against the same stored facts. The
// HTTP adapter's wire rules (status mapping, no-store, media type, redirects, a body longer than
// acknowledged, headers sent) follow.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerRuntimeRegistration } from '../../actors/runtime-core/runtime-core-embedded.ts';
import type { RuntimeStepRef } from '../../actors/runtime-core/runtime-operation.ts';
import {
  EventsAnswerRefusedError,
  EventsDeniedError,
  EventsUnavailableError,
} from '../../actors/runtime-events/errors.ts';
import type { ConfigurationAcknowledgment } from '../../actors/runtime-events/ports.ts';
import {
  EmbeddedRuntimeEvents,
  storeProtectedMaterial,
} from '../../actors/runtime-events/runtime-events-embedded.ts';
import { HttpRuntimeEvents } from '../../http/clients/runtime-events-client.ts';
import type { Database } from '../../store/db.ts';
import { migrate } from '../../store/migrate.ts';
import { actorOf } from '../support/build-test-commands.ts';
import { sendJson, sendSeed } from '../support/core-stand-in.ts';
import { backends, openBackend } from '../support/databases.ts';
import { rejection } from '../support/rejection.ts';
import { startRuntimeEventsStandIn, type RuntimeEventsStandIn } from '../support/runtime-events-stand-in.ts';
import {
  configurationBytes,
  defineRuntimeEventsContract,
  type RuntimeEventsPortSubject,
} from './runtime-events-cases.ts';
import { freshStep, registrationFor } from './runtime-core-cases.ts';

const BEARERS = {
  'acme-alice-token': { tenantId: 'acme', subject: 'alice' },
  'globex-bob-token': { tenantId: 'globex', subject: 'bob' },
};

function registrar(db: Database): Pick<RuntimeEventsPortSubject, 'registerRuntime' | 'storeMaterial'> {
  return {
    async registerRuntime(ref, generation) {
      const result = await registerRuntimeRegistration(db, registrationFor(ref, generation), 'test');
      if (result !== 'created') throw new Error(`register runtime: ${result}`);
    },
    async storeMaterial(ref, key, bytes) {
      const { result, acknowledgment } = await storeProtectedMaterial(db, { ref, ...key }, bytes, 'test');
      if (result !== 'created') throw new Error(`store material: ${result}`);
      return acknowledgment;
    },
  };
}

for (const backend of backends) {
  defineRuntimeEventsContract(`embedded (${backend})`, async () => {
    const handle = await openBackend(backend);
    await migrate(handle.db);
    return {
      events: new EmbeddedRuntimeEvents(handle.db),
      actor: actorOf('acme', 'alice', 'acme-alice-token'),
      stranger: actorOf('globex', 'bob', 'globex-bob-token'),
      // The stand-in has no bearer table: a bearer no Authorization header could carry is its denial.
      denied: actorOf('acme', 'mallory', 'not a token'),
      ...registrar(handle.db),
      close: () => handle.close(),
    };
  });
}

defineRuntimeEventsContract('HTTP adapter against a stand-in Events', async () => {
  const handle = await openBackend('pglite');
  await migrate(handle.db);
  const server = await startRuntimeEventsStandIn({ db: handle.db, bearers: BEARERS });
  return {
    events: new HttpRuntimeEvents({ baseUrl: server.url, timeoutMs: 5_000 }),
    actor: actorOf('acme', 'alice', 'acme-alice-token'),
    stranger: actorOf('globex', 'bob', 'globex-bob-token'),
    denied: actorOf('acme', 'mallory', 'acme-mallory-token'),
    ...registrar(handle.db),
    sent: () => server.requests.length,
    // Port 9 (discard) on loopback: nothing listens there in the test environment.
    unreachable: () => new HttpRuntimeEvents({ baseUrl: 'http://127.0.0.1:9/events/', timeoutMs: 5_000 }),
    close: async () => {
      await server.close();
      await handle.close();
    },
  };
});

describe('RuntimeEvents HTTP adapter on the wire', () => {
  let server: RuntimeEventsStandIn;
  let close: () => Promise<void>;
  let saved: { ref: RuntimeStepRef; acknowledgment: ConfigurationAcknowledgment; bytes: Uint8Array };
  const actor = actorOf('acme', 'alice', 'acme-alice-token');
  const signal = () => AbortSignal.timeout(10_000);

  beforeAll(async () => {
    const handle = await openBackend('pglite');
    await migrate(handle.db);
    server = await startRuntimeEventsStandIn({ db: handle.db, bearers: BEARERS });
    close = async () => {
      await server.close();
      await handle.close();
    };
    const { registerRuntime, storeMaterial } = registrar(handle.db);
    const ref = freshStep();
    await registerRuntime(ref, 1);
    const bytes = configurationBytes();
    const key = { sessionId: 'session-1', eventId: 'evt-1', objectReference: 'obj:1' };
    saved = { ref, acknowledgment: await storeMaterial(ref, key, bytes), bytes };
  }, 120_000);
  afterAll(async () => {
    await close();
  });

  const events = () => new HttpRuntimeEvents({ baseUrl: server.url, timeoutMs: 2_000 });
  const read = () => events().readProtectedMaterial(actor, saved.ref, saved.acknowledgment, signal());
  const answering = (status: number, headers: Record<string, string> = {}, body = saved.bytes) => {
    server.intercept = ({ res }) => {
      if (status === 200) sendSeed(res, body, headers);
      else sendJson(res, status, { error: 'whatever' }, headers);
      return true;
    };
  };

  it('sends the bearer, no-store and connection close, to the percent-encoded route', async () => {
    server.intercept = undefined;
    const before = server.requests.length;
    expect(await read()).not.toBeNull();
    const sent = server.requests.at(before);
    expect(sent?.headers.authorization).toBe('Bearer acme-alice-token');
    expect(sent?.headers['cache-control']).toBe('no-store');
    expect(sent?.headers.connection).toBe('close');
    expect(sent?.headers.accept).toBe('application/octet-stream');
    const { ref } = saved;
    expect(sent?.url).toBe(
      `/core/tenants/acme/projects/checkout/runs/${ref.runId}/steps/agent_1/environments/${ref.environmentId}` +
        '/sessions/session-1/events/evt-1/protected-material/obj%3A1',
    );
  });

  it.each([
    [500, EventsUnavailableError, 'server-error'],
    [503, EventsUnavailableError, 'server-error'],
    [401, EventsDeniedError, 'denied'],
    [403, EventsDeniedError, 'denied'],
    [302, EventsAnswerRefusedError, 'redirect-refused'],
    [418, EventsAnswerRefusedError, 'unexpected-status'],
  ] as const)('maps HTTP %i to %o (%s)', async (status, kind, reason) => {
    answering(status, status === 302 ? { location: 'http://127.0.0.1:1/elsewhere' } : {});
    const error = await rejection(read());
    expect(error).toBeInstanceOf(kind);
    expect((error as { reason: string }).reason).toBe(reason);
  });

  it.each([
    ['a cacheable answer', { 'cache-control': 'max-age=60' }, 'not-no-store'],
    ['an answer of another media type', { 'content-type': 'application/json' }, 'wrong-content-type'],
    ['another declared SHA-256', { 'x-content-sha256': 'e'.repeat(64) }, 'material-mismatch'],
  ])('refuses %s', async (_name, headers, reason) => {
    answering(200, headers);
    const error = await rejection(read());
    expect(error).toBeInstanceOf(EventsAnswerRefusedError);
    expect((error as EventsAnswerRefusedError).reason).toBe(reason);
  });

  it('refuses a body longer than acknowledged before it is all read', async () => {
    let streaming: NodeJS.Timeout | undefined;
    server.intercept = ({ res }) => {
      // No declared length, and bytes that never end: only the streaming cap can stop this.
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'no-store' });
      res.write(saved.bytes);
      streaming = setInterval(() => res.write(randomBytes(1024)), 5);
      res.on('close', () => clearInterval(streaming));
      return true;
    };
    const started = Date.now();
    const error = await rejection(read());
    clearInterval(streaming);
    expect(error).toBeInstanceOf(EventsAnswerRefusedError);
    expect((error as EventsAnswerRefusedError).reason).toBe('material-mismatch');
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('refuses bytes of the acknowledged length but another digest', async () => {
    const other = Buffer.from(saved.bytes);
    other[0] = other[0]! ^ 1;
    answering(200, {}, other);
    const error = await rejection(read());
    expect((error as EventsAnswerRefusedError).reason).toBe('material-mismatch');
  });
});
