import { describeConfig } from '../config/describe.ts';
import { startTracing } from '../lib/tracing-sdk.ts';
import { composeSandlot } from './compose.ts';
import { configFromEnvironment } from './context.ts';
import { startInspection } from './live-inspection.ts';
import { processLogger } from './process-logger.ts';
import { installShutdownHandlers } from './shutdown.ts';
import { UsageError } from './usage.ts';

export interface WorkerOptions {
  /** The inspector relay's URL (--inspect); unset: no inspection. */
  inspect?: string;
}

/** Workers only (effects, outbox relay, reconciler, observer): scale these apart from the API. */
export async function workerCommand(options: WorkerOptions): Promise<void> {
  const config = configFromEnvironment();
  if (config.mode === 'embedded') {
    throw new UsageError(
      'sandlot worker needs DATABASE_URL; in embedded mode `sandlot serve` runs the workers itself',
    );
  }
  const logger = processLogger(config.logLevel);
  logger.info({ config: describeConfig(config) }, 'starting sandlot worker');
  // Before anything that makes spans; null without OTEL_EXPORTER_OTLP_ENDPOINT.
  const tracing = await startTracing({ role: 'worker' });
  const sandlot = await composeSandlot(config, logger, { workers: true, role: 'worker' });
  const inspection = await startInspection(sandlot.runtime, options.inspect, logger);
  process.stdout.write(
    `sandlot worker running (${config.redisUrl === undefined ? 'in-process queue' : 'bullmq'})\n`,
  );
  if (options.inspect !== undefined) {
    process.stdout.write(`inspection: committed transitions go to ${options.inspect}\n`);
  }
  installShutdownHandlers(
    [
      { name: 'sandlot', close: () => sandlot.close() },
      ...inspection,
      ...(tracing === null ? [] : [{ name: 'tracing', close: () => tracing.close() }]),
    ],
    { logger },
  );
}
