// The one way to make a logger: every process and every fallback gets the same redaction, so a
// credential that ends up in a logged object (request headers, an error carrying its request, a
// client's settings) is written as `[redacted]`, never as itself, and a connection URL loses its
// user and password. Lines are JSON (one object per line) unless stdout is a terminal, where they
// are printed readably by pino-pretty (loaded only then), so `npm start` is legible and production,
// CI and tests get JSON.
import { createRequire } from 'node:module';
import pino, { type DestinationStream, type Level, type Logger } from 'pino';
import { redactUrl } from './redact-url.ts';

export const REDACTED = '[redacted]';

/** Keys holding a connection URL: shown without user, password or secret query parameters. */
const URL_PATHS: readonly string[] = [
  'url',
  'databaseUrl',
  'redisUrl',
  'connectionString',
  '*.url',
  '*.databaseUrl',
  '*.redisUrl',
  '*.connectionString',
];
const URL_KEYS = new Set(URL_PATHS.map((path) => path.replace('*.', '')));

function censor(value: unknown, path: string[]): unknown {
  const key = path[path.length - 1] ?? '';
  if (URL_KEYS.has(key) && typeof value === 'string') return redactUrl(value) ?? REDACTED;
  return REDACTED;
}

/**
 * Paths are case sensitive, and each `*` stands for exactly one key. Wildcard paths cost about a
 * microsecond per line each (plain paths almost nothing), so they are kept to the keys that carry
 * credentials: add a plain path where one will do.
 */
export const REDACT_PATHS: readonly string[] = [
  // At the top of the logged object.
  'authorization',
  'cookie',
  'token',
  'password',
  'secret',
  'kubeConfig',
  'kubeconfig',
  'headers.authorization',
  'headers.Authorization',
  'headers.cookie',
  'headers["set-cookie"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  // One level down, under any key: `{ user: { password } }`, `{ options: { kubeConfig } }`.
  '*.authorization',
  '*.token',
  '*.password',
  '*.cookie',
  // A KubeConfig holds its users' tokens, passwords and client keys.
  '*.kubeConfig',
  // Any object's headers: `req`, `request`, and an `err` that carries the request it failed on.
  '*.headers.authorization',
  '*.headers.cookie',
  // Signing keys, and a provider's options snapshot (values an operator configured, e.g. image
  // pull settings): neither is needed to read a log line.
  'key',
  'signingKey',
  '*.signingKey',
  'providerOptions',
  '*.providerOptions',
  ...URL_PATHS,
];

export interface LoggerOptions {
  level?: Level | 'silent';
  /** Shown as `name` on every line (a component's fallback logger). */
  name?: string;
  /** Where lines go; default stdout. Tests pass a stream to read what was written. */
  destination?: DestinationStream;
  /** Human-readable lines instead of JSON (default: when writing to stdout and it is a terminal). */
  pretty?: boolean;
}

const require = createRequire(import.meta.url);

/** pino-pretty as a synchronous stream on stdout: no worker thread, nothing left to flush at exit. */
function prettyStdout(): DestinationStream {
  const pretty = require('pino-pretty') as (options: Record<string, unknown>) => DestinationStream;
  return pretty({ colorize: true, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const settings = {
    level: options.level ?? 'info',
    ...(options.name === undefined ? {} : { name: options.name }),
    redact: { paths: [...REDACT_PATHS], censor },
  };
  const pretty = options.pretty ?? (options.destination === undefined && process.stdout.isTTY === true);
  const destination = pretty ? prettyStdout() : options.destination;
  return destination === undefined ? pino(settings) : pino(settings, destination);
}
