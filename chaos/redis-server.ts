// A redis-server of the harness's own on a free port of 127.0.0.1, without persistence, so that the
// run's FLUSHALL empties only its own queues and never the machine's shared Redis.
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { onLeak } from './cleanup.ts';
import { freePort } from '../test/support/scratch-postgres.ts';

export interface OwnRedis {
  url: string;
  pid: number;
  flushAll(): Promise<void>;
  stop(): Promise<void>;
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-4_096);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const forget = onLeak(() => child.kill('SIGKILL'));
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      forget();
      resolve();
    }),
  );
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (error) => reject(new Error(`redis-server could not start: ${error.message}`)));
  });
  await spawned;
  const url = `redis://127.0.0.1:${port}`;
  const admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 200 });
  // Connection errors while it starts are expected; the loop below reports the last one.
  admin.on('error', () => undefined);
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      if (admin.status !== 'ready') await admin.connect();
      await admin.ping();
      break;
    } catch (error) {
      if (Date.now() > deadline || child.exitCode !== null) {
        admin.disconnect();
        child.kill('SIGKILL');
        throw new Error(`redis-server on ${port} did not answer: ${String(error)}\n${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    url,
    pid: child.pid ?? -1,
    async flushAll() {
      await admin.flushall();
    },
    async stop() {
      admin.disconnect();
      if (child.exitCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
