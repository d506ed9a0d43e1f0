// DBOS Transact peer server: one workflow per Environment with the four durable steps of
// ../steps.ts, each a DBOS step (checkpointed in DBOS's system database, here the throw-away
// `bench_dbos`, which also holds the steps' own tables), behind ../server-control.ts.
// Started by ../driver.ts with its options as JSON in argv[2].
import { DBOS } from '@dbos-inc/dbos-sdk';
import { servePeer } from '../server-control.ts';
import { openPeerDatabase, peerConnection, recreateDatabase } from '../steps.ts';

const options = JSON.parse(process.argv[2] ?? '{}') as {
  jwksUrl: string;
  authorityUrl: string;
  database: string;
};
const connection = peerConnection(options.database);
await recreateDatabase(connection);
const database = await openPeerDatabase(connection);

async function environmentLifecycle(id: string): Promise<string> {
  await DBOS.runStep(() => database.register(id), { name: 'register' });
  await DBOS.runStep(() => database.provision(id), { name: 'provision' });
  await DBOS.runStep(() => database.observe(id), { name: 'observe' });
  await DBOS.runStep(() => database.release(id), { name: 'release' });
  return 'Released';
}
const lifecycle = DBOS.registerWorkflow(environmentLifecycle, { name: 'environmentLifecycle' });

const { host, port, user, database: name } = connection;
DBOS.setConfig({
  name: 'sandlot-peer',
  systemDatabaseUrl: `postgresql://${user}@${host}:${port}/${name}`,
  systemDatabasePoolSize: 20,
  logLevel: 'warn',
});
await DBOS.launch();

servePeer({
  front: { jwksUrl: options.jwksUrl, authorityUrl: options.authorityUrl },
  database,
  async invoke(id) {
    await DBOS.withNextWorkflowID(id, () => lifecycle(id));
  },
  async shutdown() {
    await DBOS.shutdown();
    await database.close();
  },
});
