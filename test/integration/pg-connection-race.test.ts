// A connection the server ends in the same breath as it accepts it: a fresh connection's
// ReadyForQuery and a FATAL 57P01 (PostgreSQL shutting down, as at `pg_ctl restart -m fast`) arrive
// in one socket chunk, so pg emits the error while the pool is handing the client over, before the
// transaction's own listener is attached. Found by the chaos run (a worker died with "Unhandled
// 'error' event"). A server of ours on 127.0.0.1 speaks just enough of the protocol to send that
// chunk, so the race happens every time: the transaction must fail with 503, the process live on.
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseUnavailableError } from '../../store/database-errors.ts';
import { createPgDatabase } from '../../store/pg-database.ts';

function message(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

const authenticationOk = message('R', Buffer.from([0, 0, 0, 0]));
const readyForQuery = message('Z', Buffer.from('I', 'latin1'));
const adminShutdown = message(
  'E',
  Buffer.from('SFATAL\0C57P01\0Mterminating connection due to administrator command\0\0', 'latin1'),
);

/** Accepts the startup message, then answers "ready" and "terminated" in one write and closes. */
function startDyingServer(): Promise<{ server: Server; url: string; connections: () => number }> {
  let connections = 0;
  const server = createServer((socket: Socket) => {
    connections++;
    socket.once('data', () => {
      socket.end(Buffer.concat([authenticationOk, readyForQuery, adminShutdown]));
    });
    socket.on('error', () => undefined);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      resolve({ server, url: `postgres://sandlot@127.0.0.1:${port}/race`, connections: () => connections });
    });
  });
}

describe('a connection terminated as it is handed over', () => {
  let dying: Awaited<ReturnType<typeof startDyingServer>>;
  beforeAll(async () => {
    dying = await startDyingServer();
  });
  afterAll(async () => {
    await new Promise((resolve) => dying.server.close(resolve));
  });

  it('fails the transaction with 503 database-unavailable and leaves the process running', async () => {
    const lost: Error[] = [];
    const db = createPgDatabase({
      connectionString: dying.url,
      max: 2,
      onConnectionLost: (e) => lost.push(e),
    });
    try {
      for (let i = 0; i < 5; i++) {
        const failed = await db.transaction((tx) => tx.query('SELECT 1')).catch((error: unknown) => error);
        expect(failed).toBeInstanceOf(DatabaseUnavailableError);
      }
      // Every connection was made and ended; none was handed to a second transaction.
      expect(dying.connections()).toBeGreaterThanOrEqual(5);
      // And the process was told of each loss, as of any other.
      expect(lost.length).toBeGreaterThanOrEqual(5);
      expect(lost.every((error) => (error as Error & { code?: string }).code === '57P01')).toBe(true);
    } finally {
      await db.close();
    }
  });
});
