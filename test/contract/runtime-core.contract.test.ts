// The RuntimeCore port contract over both implementations: the embedded stand-in on its own tables
// (PGlite and PostgreSQL), and the HTTP adapter against a stand-in Core server on 127.0.0.1 that
// answers from the same embedded tables, so both are judged against the same registered facts.
// The HTTP adapter's wire rules (status mapping, no-store, redirects, headers sent) follow.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CoreAnswerRefusedError,
  CoreDeniedError,
  CoreUnavailableError,
} from '../../actors/build-test/core-errors.ts';
import {
  EmbeddedRuntimeCore,
  moveRuntimeOperation,
  registerRuntimeOperation,
  registerRuntimeRegistration,
  saveRuntimeOperationEvidence,
} from '../../actors/runtime-core/runtime-core-embedded.ts';
import { HttpRuntimeCore } from '../../http/clients/runtime-core-client.ts';
import type { Database } from '../../store/db.ts';
import { migrate } from '../../store/migrate.ts';
import { actorOf } from '../support/build-test-commands.ts';
import { sendJson } from '../support/core-stand-in.ts';
import { backends, openBackend } from '../support/databases.ts';
import { rejection } from '../support/rejection.ts';
import { startRuntimeCoreStandIn, type RuntimeCoreStandIn } from '../support/runtime-core-stand-in.ts';
import {
  defineRuntimeCoreContract,
  freshStep,
  type RuntimeCorePortSubject,
  type TamperedRoute,
} from './runtime-core-cases.ts';

const BEARERS = {
  'acme-alice-token': { tenantId: 'acme', subject: 'alice' },
  'globex-bob-token': { tenantId: 'globex', subject: 'bob' },
};

type Registrar = Pick<RuntimeCorePortSubject, 'reserve' | 'saveEvidence' | 'move' | 'registerRuntime'>;

function registrar(db: Database): Registrar {
  return {
    async reserve(ref, operationId, terms) {
      const result = await registerRuntimeOperation(db, { ref, operationId, terms }, 'test');
      if (result !== 'created') throw new Error(`reserve: ${result}`);
    },
    async saveEvidence(ref, operationId, evidence) {
      const result = await saveRuntimeOperationEvidence(db, ref, operationId, evidence);
      if (result !== 'created') throw new Error(`save evidence: ${result}`);
    },
    async move(ref, operationId, fromRevision, to) {
      const { result } = await moveRuntimeOperation(db, ref, operationId, fromRevision, to);
      if (result !== 'moved') throw new Error(`move: ${result}`);
    },
    async registerRuntime(registration) {
      const result = await registerRuntimeRegistration(db, registration, 'test');
      if (result !== 'created') throw new Error(`register runtime: ${result}`);
    },
  };
}

for (const backend of backends) {
  defineRuntimeCoreContract(`embedded (${backend})`, async () => {
    const handle = await openBackend(backend);
    await migrate(handle.db);
    return {
      core: new EmbeddedRuntimeCore(handle.db),
      actor: actorOf('acme', 'alice', 'acme-alice-token'),
      stranger: actorOf('globex', 'bob', 'globex-bob-token'),
      // The stand-in has no bearer table: a bearer no Authorization header could carry is its denial.
      denied: actorOf('acme', 'mallory', 'not a token'),
      ...registrar(handle.db),
      close: () => handle.close(),
    };
  });
}

defineRuntimeCoreContract('HTTP adapter against a stand-in Core', async () => {
  const handle = await openBackend('pglite');
  await migrate(handle.db);
  const server = await startRuntimeCoreStandIn({
    backend: new EmbeddedRuntimeCore(handle.db),
    bearers: BEARERS,
  });
  const changes = new Map<TamperedRoute, (answer: Record<string, unknown>) => unknown>();
  server.transform = (route, answer) => (changes.get(route) ?? ((a) => a))(answer);
  return {
    core: new HttpRuntimeCore({ baseUrl: server.url, timeoutMs: 5_000 }),
    actor: actorOf('acme', 'alice', 'acme-alice-token'),
    stranger: actorOf('globex', 'bob', 'globex-bob-token'),
    denied: actorOf('acme', 'mallory', 'acme-mallory-token'),
    ...registrar(handle.db),
    sent: () => server.requests.length,
    tamper: (route, change) => changes.set(route, change),
    // Port 9 (discard) on loopback: nothing listens there in the test environment.
    unreachable: () => new HttpRuntimeCore({ baseUrl: 'http://127.0.0.1:9/core/', timeoutMs: 5_000 }),
    close: async () => {
      await server.close();
      await handle.close();
    },
  };
});

describe('RuntimeCore HTTP adapter on the wire', () => {
  let server: RuntimeCoreStandIn;
  let close: () => Promise<void>;
  const actor = actorOf('acme', 'alice', 'acme-alice-token');
  const signal = () => AbortSignal.timeout(10_000);

  beforeAll(async () => {
    const handle = await openBackend('pglite');
    await migrate(handle.db);
    server = await startRuntimeCoreStandIn({ backend: new EmbeddedRuntimeCore(handle.db), bearers: BEARERS });
    close = async () => {
      await server.close();
      await handle.close();
    };
  }, 120_000);
  afterAll(async () => {
    await close();
  });

  const core = () => new HttpRuntimeCore({ baseUrl: server.url, timeoutMs: 2_000 });
  const answering = (status: number, headers: Record<string, string> = {}) => {
    server.intercept = ({ res }) => {
      sendJson(res, status, { state: 'whatever' }, headers);
      return true;
    };
  };

  it('sends the bearer and no-store on every call, and accepts no answer without no-store', async () => {
    server.intercept = undefined;
    const before = server.requests.length;
    await core().currentRuntimeOperation(actor, freshStep(), signal());
    const sent = server.requests.at(before);
    expect(sent?.headers.authorization).toBe('Bearer acme-alice-token');
    expect(sent?.headers['cache-control']).toBe('no-store');

    answering(200, { 'cache-control': 'max-age=60' });
    const error = await rejection(core().currentRuntimeOperation(actor, freshStep(), signal()));
    expect((error as CoreAnswerRefusedError).reason).toBe('not-no-store');
  });

  it.each([
    [500, CoreUnavailableError, 'server-error'],
    [503, CoreUnavailableError, 'server-error'],
    [401, CoreDeniedError, 'denied'],
    [403, CoreDeniedError, 'denied'],
    [302, CoreAnswerRefusedError, 'redirect-refused'],
    [418, CoreAnswerRefusedError, 'unexpected-status'],
  ] as const)('maps HTTP %i to %o (%s)', async (status, kind, reason) => {
    answering(status, status === 302 ? { location: 'http://127.0.0.1:1/elsewhere' } : {});
    const error = await rejection(core().currentRuntimeRegistration(actor, freshStep(), signal()));
    expect(error).toBeInstanceOf(kind);
    expect((error as { reason: string }).reason).toBe(reason);
  });

  it('refuses an answer of the wrong media type before reading it', async () => {
    answering(200, { 'content-type': 'text/html' });
    const error = await rejection(core().currentRuntimeOperation(actor, freshStep(), signal()));
    expect((error as CoreAnswerRefusedError).reason).toBe('wrong-content-type');
  });
});
