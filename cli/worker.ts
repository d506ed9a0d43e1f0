import { describeConfig } from '../config/describe.ts';
import { startHealthServer, type HealthServer } from '../lib/health-server.ts';
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
  // Up before the workers, so the kubelet sees a live process (/healthz) that is not ready yet
  // (/readyz 503) while migrations, Redis and the provider come up.
  let ready: (() => Promise<string[]>) | null = null;
  const health: HealthServer | null =
    config.workerHealth === undefined
      ? null
      : await startHealthServer({
          ...config.workerHealth,
          unreadiness: () => (ready === null ? Promise.resolve(['workers are starting']) : ready()),
        });
  if (health !== null) logger.info({ url: health.url }, 'worker health listening');
  const sandlot = await composeSandlot(config, logger, { workers: true, role: 'worker' }).catch(
    async (error: unknown) => {
      await health?.close();
      throw error;
    },
  );
  const { workers } = sandlot;
  ready = () => (workers === null ? Promise.resolve(['workers did not start']) : workers.unreadiness());
  const inspection = await startInspection(sandlot.runtime, options.inspect, logger);
  process.stdout.write(
    `sandlot worker running (${config.redisUrl === undefined ? 'in-process queue' : 'bullmq'})\n`,
  );
  if (options.inspect !== undefined) {
    process.stdout.write(`inspection: committed transitions go to ${options.inspect}\n`);
  }
  // The probe listener closes last: while the workers drain, /healthz still answers (no restart
  // mid-drain) and /readyz says they are stopped.
  installShutdownHandlers(
    [
      { name: 'sandlot', close: () => sandlot.close() },
      ...(health === null ? [] : [{ name: 'health', close: () => health.close() }]),
      ...inspection,
      ...(tracing === null ? [] : [{ name: 'tracing', close: () => tracing.close() }]),
    ],
    { logger },
  );
}
