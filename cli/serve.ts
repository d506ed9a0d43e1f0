import { serve } from '@hono/node-server';
import { describeConfig } from '../config/describe.ts';
import { createLogger } from '../lib/logger.ts';
import { composeSandlot } from './compose.ts';
import { configFromEnvironment, dataDirOf } from './context.ts';
import { installShutdownHandlers } from './shutdown.ts';
import { UsageError, parseOptions } from './usage.ts';

export async function serveCommand(args: string[]): Promise<void> {
  const options = parseOptions(args, {
    port: { type: 'string' },
    // An API-only process: effects it commits are published by the workers' outbox relays.
    'no-workers': { type: 'boolean', default: false },
  });
  const config = configFromEnvironment();
  if (options.port !== undefined) {
    const port = Number(options.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new UsageError(`--port must be 0-65535, got "${options.port}"`);
    config.port = port;
  }
  const logger = createLogger({ level: config.logLevel });
  logger.info({ config: describeConfig(config) }, 'starting sandlot');
  if (options['no-workers'] && config.mode === 'embedded') {
    throw new UsageError('--no-workers needs DATABASE_URL; in embedded mode this process is the only worker');
  }
  const sandlot = await composeSandlot(config, logger, { workers: !options['no-workers'] });

  const server = serve({ fetch: sandlot.app.fetch, port: config.port, hostname: config.host }, (info) => {
    logger.info({ address: info.address, port: info.port, mode: config.mode }, 'listening');
    // One line a human (or a script) can wait for.
    process.stdout.write(`sandlot listening on http://${config.host}:${info.port} (${config.mode})\n`);
    if (config.mode === 'embedded') {
      process.stdout.write(
        `data in ${dataDirOf(config)}; mint a token with: npx sandlot token --tenant T --sub S\n`,
      );
    }
  });

  // Stop accepting and let in-flight requests finish (idle keep-alive connections are closed), then
  // the workers, the provider and the database, which those requests still needed.
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
    ],
    { logger },
  );
}
