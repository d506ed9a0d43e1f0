// A failed run's database, kept for diagnosis: `pg_dump` of the run's own PostgreSQL into the run
// directory before the server is removed. The lead needs the journal and attempt rows, not just IDs.
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

async function pgDump(): Promise<string> {
  const root = '/usr/lib/postgresql';
  const versions = (await readdir(root).catch(() => [] as string[])).sort((a, b) => Number(b) - Number(a));
  return versions.length === 0 ? 'pg_dump' : join(root, versions[0] as string, 'bin', 'pg_dump');
}

/** Writes `<file>` (plain SQL); returns an error message instead of throwing. */
export async function dumpDatabase(url: string, file: string): Promise<string | null> {
  try {
    await run(await pgDump(), ['--no-owner', '--file', file, url], { maxBuffer: 64 * 1024 * 1024 });
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}
