import { mkdir } from 'node:fs/promises';
import type { Logger } from 'pino';
import { resolve } from 'node:path';
import { loadConfig } from '../config/load.ts';
import type { Config } from '../config/types.ts';
import type { Database } from '../store/db.ts';
import { createPgDatabase } from '../store/pg-database.ts';
import { createPgliteDatabase } from '../store/pglite-database.ts';

export function configFromEnvironment(): Config {
  return loadConfig(process.env);
}

export function dataDirOf(config: Config): string {
  return resolve(process.cwd(), config.dataDir);
}

/**
 * PostgreSQL when DATABASE_URL is set; otherwise PGlite persisted under the data directory. A lost
 * PostgreSQL connection is one structured log line; the process goes on and reconnects.
 */
export async function openDatabase(config: Config, logger?: Logger): Promise<Database> {
  if (config.databaseUrl !== undefined) {
    return createPgDatabase({
      connectionString: config.databaseUrl,
      onConnectionLost: (error) =>
        logger?.warn(
          { code: (error as { code?: unknown }).code ?? null, reason: error.message },
          'database connection lost',
        ),
    });
  }
  const dir = resolve(dataDirOf(config), 'pgdata');
  await mkdir(dir, { recursive: true });
  return createPgliteDatabase(dir);
}
