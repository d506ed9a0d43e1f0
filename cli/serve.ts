import { serve } from '@hono/node-server';
import pino from 'pino';
import { describeConfig } from '../config/describe.ts';
import { composeSandlot } from './compose.ts';
import { configFromEnvironment, dataDirOf } from './context.ts';
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
  const logger = pino({ level: config.logLevel, redact: ['req.headers.authorization', '*.authorization'] });
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

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    server.close(() => {
      void sandlot.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
    // Open keep-alive connections must not hold the process past a pod's grace period.
    setTimeout(() => process.exit(0), 10_000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
