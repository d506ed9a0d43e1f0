import { migrate } from '../store/migrate.ts';
import { configFromEnvironment, openDatabase } from './context.ts';
import { parseOptions } from './usage.ts';

export async function migrateCommand(args: string[]): Promise<void> {
  parseOptions(args, {});
  const db = await openDatabase(configFromEnvironment());
  try {
    const { applied } = await migrate(db, { onApplied: (name) => process.stdout.write(`applied ${name}\n`) });
    process.stdout.write(
      applied.length === 0 ? 'database is up to date\n' : `${applied.length} migration(s) applied\n`,
    );
  } finally {
    await db.close();
  }
}
