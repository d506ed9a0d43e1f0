// Which migration sets a configuration needs, for `sandlot migrate` and migrate-on-start alike: the
// core schema always, the simulated provider's table only where the simulated provider is configured
// (a Kubernetes deployment never carries it).
import type { Config } from '../config/types.ts';
import { migrateSimulated } from '../providers/simulated/migrate.ts';
import type { Database } from '../store/db.ts';
import { migrate } from '../store/migrate.ts';

/** Applies what is pending; `onApplied` and the result name provider-set files `simulated/NNNN_….sql`. */
export async function migrateFor(
  db: Database,
  config: Pick<Config, 'provider'>,
  onApplied: (name: string) => void = () => undefined,
): Promise<string[]> {
  const { applied } = await migrate(db, { onApplied });
  if (config.provider.id !== 'simulated') return applied;
  const simulated = await migrateSimulated(db, { onApplied: (name) => onApplied(`simulated/${name}`) });
  return [...applied, ...simulated.applied.map((name) => `simulated/${name}`)];
}
