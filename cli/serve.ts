import { serve } from '@hono/node-server';
import { describeConfig } from '../config/describe.ts';
import { startTracing } from '../lib/tracing-sdk.ts';
import { composeSandlot } from './compose.ts';
import { configFromEnvironment, dataDirOf } from './context.ts';
import { markEmbeddedServe } from './journal-reader.ts';
import { startInspection } from './live-inspection.ts';
import { processLogger } from './process-logger.ts';
import { installShutdownHandlers } from './shutdown.ts';
import { UsageError } from './usage.ts';

export interface ServeOptions {
  /** Parsed by main.ts (0-65535); unset: PORT or the default. */
  port?: number;
  /** false with --no-workers: an API-only process. */
  workers: boolean;
  /** The inspector relay's URL (--inspect); unset: no inspection. */
  inspect?: string;
}

export async function serveCommand(options: ServeOptions): Promise<void> {
  const config = configFromEnvironment();
  if (options.port !== undefined) config.port = options.port;
  // An API-only process: effects it commits are published by the workers' outbox relays.
  if (!options.workers && config.mode === 'embedded') {
    throw new UsageError('--no-workers needs DATABASE_URL; in embedded mode this process is the only worker');
  }
  const logger = processLogger(config.logLevel);
  logger.info({ config: describeConfig(config) }, 'starting sandlot');
  // Before anything that makes spans; null without OTEL_EXPORTER_OTLP_ENDPOINT.
  const tracing = await startTracing({ role: options.workers === false ? 'api' : 'serve' });
  // The API process also serves the sandbox hosts' private control listener (sandbox-host only).
  const sandlot = await composeSandlot(config, logger, {
    workers: options.workers,
    hostControl: true,
    role: options.workers === false ? 'api' : 'serve',
  });
  const inspection = await startInspection(sandlot.runtime, options.inspect, logger);
  // While it runs, `sandlot history` and `inspect` must not open the embedded database too.
  const unmark = await markEmbeddedServe(config);

  const server = serve({ fetch: sandlot.app.fetch, port: config.port, hostname: config.host }, (info) => {
    const { hostControl } = sandlot;
    logger.info(
      {
        address: info.address,
        port: info.port,
        mode: config.mode,
        ...(hostControl === null ? {} : { hostControlPort: hostControl.port }),
      },
      'listening',
    );
    // One line a human (or a script) can wait for.
    process.stdout.write(`sandlot listening on http://${config.host}:${info.port} (${config.mode})\n`);
    if (hostControl !== null) {
      process.stdout.write(`host control listening on ${hostControl.host}:${hostControl.port} (mTLS)\n`);
    }
    if (config.mode === 'embedded') {
      process.stdout.write(
        `data in ${dataDirOf(config)}; mint a token with: npx sandlot token --tenant T --sub S\n`,
      );
    }
    if (options.inspect !== undefined) {
      process.stdout.write(`inspection: committed transitions go to ${options.inspect}\n`);
    }
  });

  // Stop accepting and let in-flight requests finish (idle keep-alive connections are closed), then
  // the workers, the provider and the database, which those requests still needed; the inspector
  // last, so it can still send what they committed.
  installShutdownHandlers(
    [
      {
        name: 'http',
        close: () =>
          new Promise<void>((resolve, reject) =>
            server.close((error) => (error ? reject(error) : resolve())),
          ),
      },
      { name: 'sandlot', close: () => sandlot.close() },
      { name: 'data-dir', close: unmark },
      ...inspection,
      ...(tracing === null ? [] : [{ name: 'tracing', close: () => tracing.close() }]),
    ],
    { logger },
  );
}
