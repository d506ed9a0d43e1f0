// The part every peer server process shares: its front (see front.ts) plus control routes the
// driver uses between measured points (run an in-process load, count Released rows, shut down),
// served on 127.0.0.1; it prints `PEER-READY {"port":…}` on stdout once listening.
import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { createFront, type FrontOptions } from './front.ts';
import { readyMarker, runLoad, type EngineRun } from './load.ts';
import type { PeerDatabase } from './steps.ts';

export interface PeerServer {
  front: Omit<FrontOptions, 'invoke'>;
  database: PeerDatabase;
  invoke: (id: string) => Promise<void>;
  shutdown: () => Promise<void>;
}

export function servePeer(peer: PeerServer): void {
  const app = createFront({ ...peer.front, invoke: peer.invoke });
  app.post('/control/engine-run', async (c) => {
    const run = await c.req.json<EngineRun>();
    return c.json(await runLoad(run.concurrency, run.count, run.prefix, peer.invoke));
  });
  app.get('/control/released', async (c) =>
    c.json({ released: await peer.database.released(c.req.query('prefix') ?? '') }),
  );
  app.post('/control/shutdown', (c) => {
    setImmediate(() => {
      void peer.shutdown().finally(() => process.exit(0));
    });
    return c.json({ ok: true });
  });
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => {
    process.stdout.write(
      `${readyMarker}${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`,
    );
  });
}
