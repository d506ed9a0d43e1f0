import { configFromEnvironment, openDatabase } from './context.ts';
import { migrateFor } from './migrations.ts';

export async function migrateCommand(): Promise<void> {
  const config = configFromEnvironment();
  const db = await openDatabase(config);
  try {
    const applied = await migrateFor(db, config, (name) => process.stdout.write(`applied ${name}\n`));
    process.stdout.write(
      applied.length === 0 ? 'database is up to date\n' : `${applied.length} migration(s) applied\n`,
    );
  } finally {
    await db.close();
  }
}
