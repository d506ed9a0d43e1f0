// The journal as `sandlot history` and `sandlot inspect` read it: straight from the database the
// other commands open (PostgreSQL with DATABASE_URL, otherwise the embedded data directory), not
// through the API, so an operator needs no token and sees every source.
//
// The embedded database (PGlite) is one process's files: a second process opening them while
// `sandlot serve` runs could damage them. Serve marks the data directory while it runs
// (`serve.pid`); these commands refuse to open it then.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Config } from '../config/types.ts';
import { readEnvironment } from '../store/environments.ts';
import { readJournal, type JournalEntry } from '../store/journal.ts';
import { configFromEnvironment, dataDirOf, openDatabase } from './context.ts';

/** An Environment that is not there, or a database that may not be opened now (exit code 1). */
export class JournalReadError extends Error {
  override readonly name = 'JournalReadError';
}

const pidFileOf = (config: Config) => resolve(dataDirOf(config), 'serve.pid');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Serve in embedded mode: mark the data directory as open; returns the unmark. */
export async function markEmbeddedServe(config: Config): Promise<() => Promise<void>> {
  if (config.mode !== 'embedded') return () => Promise.resolve();
  const file = pidFileOf(config);
  await writeFile(file, `${process.pid}\n`);
  return () => rm(file, { force: true });
}

export async function refuseWhileServing(config: Config): Promise<void> {
  if (config.mode !== 'embedded') return;
  const text = await readFile(pidFileOf(config), 'utf8').catch(() => null);
  const pid = text === null ? Number.NaN : Number(text.trim());
  if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
    throw new JournalReadError(
      `sandlot serve (pid ${pid}) has the embedded database in ${dataDirOf(config)} open; stop it ` +
        'first (one process at a time may open it), or run Sandlot on PostgreSQL (DATABASE_URL). ' +
        'This command reads the database itself, across tenants and with every source, which no API ' +
        'route serves; while serve runs, `sandlot envs show`, `sandlot attempts`, `sandlot history --url` ' +
        'and `sandlot inspect --server` read through its API',
    );
  }
}

/** Every journal row of the Environment, oldest first; fails when there is no such Environment. */
export async function readEnvironmentJournal(environmentId: string): Promise<JournalEntry[]> {
  const config = configFromEnvironment();
  await refuseWhileServing(config);
  const db = await openDatabase(config);
  try {
    if ((await readEnvironment(db, environmentId)) === null) {
      const where =
        config.mode === 'embedded' ? `the embedded database in ${dataDirOf(config)}` : 'DATABASE_URL';
      throw new JournalReadError(`no Environment ${environmentId} in ${where}`);
    }
    return await readJournal(db, environmentId);
  } finally {
    await db.close();
  }
}
