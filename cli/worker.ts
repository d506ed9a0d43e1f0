import { describeConfig } from '../config/describe.ts';
import { createLogger } from '../lib/logger.ts';
import { composeSandlot } from './compose.ts';
import { configFromEnvironment } from './context.ts';
import { installShutdownHandlers } from './shutdown.ts';
import { UsageError, parseOptions } from './usage.ts';

/** Workers only (effects, outbox relay, reconciler): scale these apart from the API. */
export async function workerCommand(args: string[]): Promise<void> {
  parseOptions(args, {});
  const config = configFromEnvironment();
  if (config.mode === 'embedded') {
    throw new UsageError(
      'sandlot worker needs DATABASE_URL; in embedded mode `sandlot serve` runs the workers itself',
    );
  }
  const logger = createLogger({ level: config.logLevel });
  logger.info({ config: describeConfig(config) }, 'starting sandlot worker');
  const sandlot = await composeSandlot(config, logger, { workers: true });
  process.stdout.write(
    `sandlot worker running (${config.redisUrl === undefined ? 'in-process queue' : 'bullmq'})\n`,
  );
  installShutdownHandlers([{ name: 'sandlot', close: () => sandlot.close() }], { logger });
}
