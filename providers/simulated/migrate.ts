// The simulated provider's own migration set: its stand-in cluster table is created only in
// databases where the simulated provider is configured, never by the core schema every deployment
// gets. Its own ledger keeps its version numbers apart from the core set's.
import type { Database } from '../../store/db.ts';
import { migrate, type MigrateOptions } from '../../store/migrate.ts';

export const SIMULATED_MIGRATIONS = {
  directory: new URL('./migrations/', import.meta.url),
  ledger: 'simulated_schema_migrations',
} as const;

export function migrateSimulated(
  db: Database,
  options: Pick<MigrateOptions, 'onApplied'> = {},
): Promise<{ applied: string[] }> {
  return migrate(db, { ...options, ...SIMULATED_MIGRATIONS });
}
