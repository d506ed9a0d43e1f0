// The Core port contract over both implementations: the embedded stand-in on its own tables (PGlite
// and PostgreSQL), and the HTTP adapter against a stand-in Core server on 127.0.0.1 that answers
// from the same embedded tables, so both are judged against the same registered facts.
import {
  EmbeddedCore,
  registerAcceptedCommand,
  registerAdmission,
  registerWorkspaceSeed,
} from '../../actors/build-test/core-embedded.ts';
import type { AcceptedBuildTestCommand, JournalAcknowledgment } from '../../actors/ports.ts';
import { HttpCore } from '../../http/clients/core-client.ts';
import type { Database } from '../../store/db.ts';
import { migrate } from '../../store/migrate.ts';
import { actorOf } from '../support/build-test-commands.ts';
import { startCoreStandIn } from '../support/core-stand-in.ts';
import { backends, openBackend } from '../support/databases.ts';
import { defineCorePortContract, type CorePortSubject } from './core-port-cases.ts';

const BEARERS = {
  'acme-alice-token': { tenantId: 'acme', subject: 'alice' },
  'globex-bob-token': { tenantId: 'globex', subject: 'bob' },
};

function registrar(db: Database): Pick<CorePortSubject, 'register' | 'admit'> {
  return {
    async register(command: AcceptedBuildTestCommand, seed?: Uint8Array) {
      if (seed !== undefined) {
        const { tenantId, projectId } = command.checkpoint;
        await registerWorkspaceSeed(db, { tenantId, projectId, bytes: seed, createdBy: 'test' });
      }
      const result = await registerAcceptedCommand(db, command, 'test');
      if (result !== 'created') throw new Error(`register: ${result}`);
    },
    async admit(acknowledgment: JournalAcknowledgment) {
      const result = await registerAdmission(db, acknowledgment, 'test');
      if (result !== 'created') throw new Error(`admit: ${result}`);
    },
  };
}

for (const backend of backends) {
  defineCorePortContract(`embedded (${backend})`, async () => {
    const handle = await openBackend(backend);
    await migrate(handle.db);
    return {
      core: new EmbeddedCore(handle.db),
      actor: actorOf('acme', 'alice', 'acme-alice-token'),
      stranger: actorOf('globex', 'bob', 'globex-bob-token'),
      ...registrar(handle.db),
      close: () => handle.close(),
    };
  });
}

defineCorePortContract('HTTP adapter against a stand-in Core', async () => {
  const handle = await openBackend('pglite');
  await migrate(handle.db);
  const server = await startCoreStandIn({ backend: new EmbeddedCore(handle.db), bearers: BEARERS });
  return {
    core: new HttpCore({ baseUrl: server.url, timeoutMs: 5_000, seedTimeoutMs: 5_000 }),
    actor: actorOf('acme', 'alice', 'acme-alice-token'),
    stranger: actorOf('globex', 'bob', 'globex-bob-token'),
    ...registrar(handle.db),
    close: async () => {
      await server.close();
      await handle.close();
    },
  };
});
