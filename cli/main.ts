// `sandlot <command>`: one process entry for every mode. Exit codes: 0 ok, 1 failure, 2 usage.
import { ConfigError } from '../config/errors.ts';
import { demoCommand } from './demo.ts';
import { migrateCommand } from './migrate.ts';
import { serveCommand } from './serve.ts';
import { tokenCommand } from './token.ts';
import { workerCommand } from './worker.ts';
import { UsageError } from './usage.ts';

const usage = `Usage: sandlot <command> [options]

Commands:
  serve [--port N] [--no-workers]          run the API (and, unless --no-workers, the workers)
  worker                                   run effect workers, outbox relay and reconciler (needs DATABASE_URL)
  migrate                                  apply database migrations and exit
  token --tenant T --sub S [--admin] [--ttl 1h] [--project P --run R]
                                           print a dev token signed with the embedded key
  demo [--url http://127.0.0.1:8080]       run one sandbox lease end to end against a running embedded serve

Configuration comes from environment variables; see README.md.`;

const commands: Record<string, (args: string[]) => Promise<void>> = {
  serve: serveCommand,
  migrate: migrateCommand,
  token: tokenCommand,
  demo: demoCommand,
  worker: workerCommand,
};

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(`${usage}\n`);
    return name === undefined ? 2 : 0;
  }
  const command = commands[name];
  if (command === undefined) {
    process.stderr.write(`sandlot: unknown command "${name}"\n\n${usage}\n`);
    return 2;
  }
  try {
    await command(args);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`sandlot ${name}: ${error.message}\n`);
      return 2;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      return 1;
    }
    process.stderr.write(`sandlot ${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

const code = await main(process.argv.slice(2));
// `serve` keeps running until a signal; every other command ends here.
const longRunning = process.argv[2] === 'serve' || process.argv[2] === 'worker';
if (!longRunning || code !== 0) process.exitCode = code;
