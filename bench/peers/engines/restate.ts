// Restate peer server: a virtual object keyed by Environment whose one handler runs the four
// durable steps of ../steps.ts as `ctx.run` blocks, served to the Restate server on
// 127.0.0.1:9080 (HTTP/2), behind ../server-control.ts whose front calls Restate's ingress
// (127.0.0.1:8080). Runs inside the driver's network namespace, so PostgreSQL is reached over its
// Unix socket. Started by ../driver.ts with its options as JSON in argv[2].
import '../polyfill.ts';
import * as restate from '@restatedev/restate-sdk';
import { callIngress } from '../restate-runtime.ts';
import { servePeer } from '../server-control.ts';
import { openPeerDatabase, peerConnection, recreateDatabase } from '../steps.ts';

const options = JSON.parse(process.argv[2] ?? '{}') as {
  jwksUrl: string;
  authorityUrl: string;
  database: string;
};
const connection = peerConnection(options.database, true);
await recreateDatabase(connection);
const database = await openPeerDatabase(connection);

const environment = restate.object({
  name: 'PeerEnvironment',
  handlers: {
    lifecycle: async (ctx: restate.ObjectContext): Promise<string> => {
      const id = ctx.key;
      await ctx.run('register', () => database.register(id));
      await ctx.run('provision', () => database.provision(id));
      await ctx.run('observe', () => database.observe(id));
      await ctx.run('release', () => database.release(id));
      return 'Released';
    },
  },
});

await restate.serve({
  services: [environment],
  port: Number(process.env['BENCH_RESTATE_ENDPOINT_PORT'] ?? 9080),
});

servePeer({
  front: { jwksUrl: options.jwksUrl, authorityUrl: options.authorityUrl },
  database,
  invoke: callIngress,
  async shutdown() {
    await database.close();
  },
});
