// A PostgreSQL server of the test's own (its own data directory and port on 127.0.0.1), for tests
// that restart or stop the database. Never the machine's shared server. Built with the server's own
// initdb and pg_ctl; as root they run as the `postgres` user, as PostgreSQL requires.
import { execFile } from 'node:child_process';
import { chown, mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface ScratchPostgres {
  url: string;
  /** `pg_ctl restart -m fast`: every connection is terminated (57P01), then the server is back. */
  restart(): Promise<void>;
  stop(): Promise<void>;
  start(): Promise<void>;
  remove(): Promise<void>;
}

async function binDir(): Promise<string | null> {
  const root = '/usr/lib/postgresql';
  try {
    const versions = (await readdir(root)).sort((a, b) => Number(b) - Number(a));
    return versions.length === 0 ? null : join(root, versions[0]!, 'bin');
  } catch {
    return null;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address !== null
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

/** Null when this machine has no PostgreSQL server binaries (the caller skips, saying why). */
export async function startScratchPostgres(): Promise<ScratchPostgres | null> {
  const bin = await binDir();
  if (bin === null) return null;
  const dir = await mkdtemp(join(tmpdir(), 'sandlot-pg-'));
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const pg = (tool: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]) : run(join(bin, tool), args);
  const port = await freePort();
  const data = join(dir, 'data');
  await pg('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const serverOptions = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off`;
  const ctl = (...args: string[]) =>
    pg('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-o', serverOptions, ...args]);
  await ctl('start');
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: async () => {
      await ctl('-m', 'fast', 'restart');
    },
    stop: async () => {
      await ctl('-m', 'fast', 'stop');
    },
    start: async () => {
      await ctl('start');
    },
    remove: async () => {
      await ctl('-m', 'immediate', 'stop').catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
