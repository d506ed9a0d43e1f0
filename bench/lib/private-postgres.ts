// `--private-postgres`: a PostgreSQL cluster of the benchmark's own (initdb in a temporary
// directory, trust auth, 127.0.0.1 on a free port, the installed server's defaults), so that no one
// else's transactions land in the transaction-ID delta, the server's CPU or pgbench's tps. Run as
// root, the cluster belongs to the `postgres` user (PostgreSQL refuses to run as root).
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onInterrupt } from './interrupt.ts';

export interface PrivatePostgres {
  /** A server URL (database `postgres`). */
  url: string;
  port: number;
  /** Its Unix socket directory (for the Restate peer inside its network namespace). */
  socketDir: string;
  stop(): Promise<void>;
}

function binDir(): string {
  const fromPgConfig = (() => {
    try {
      return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
    } catch {
      return '';
    }
  })();
  for (const dir of [fromPgConfig, '/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/16/bin']) {
    if (dir !== '' && existsSync(join(dir, 'initdb'))) return dir;
  }
  throw new Error('--private-postgres: no initdb found (pg_config --bindir, /usr/lib/postgresql/*/bin)');
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = binDir();
  const dir = await mkdtemp(join(tmpdir(), 'sandlot-bench-pg-'));
  const data = join(dir, 'data');
  const root = process.getuid?.() === 0;
  let uid = -1;
  if (root) {
    uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const run = (command: string, args: string[]) =>
    execFileSync(root ? 'runuser' : command, root ? ['-u', 'postgres', '--', command, ...args] : args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  const port = await freePort();
  run(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  run(join(bin, 'pg_ctl'), [
    '-D',
    data,
    '-l',
    join(dir, 'server.log'),
    '-w',
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`,
    'start',
  ]);
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      forget();
      try {
        run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    })());
  const forget = onInterrupt('private PostgreSQL', stop);
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, port, socketDir: dir, stop };
}
