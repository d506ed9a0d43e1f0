// The one way to make a logger: every process and every fallback gets the same redaction, so a
// credential that ends up in a logged object (request headers, an error carrying its request, a
// client's settings) is written as `[redacted]`, never as itself.
import pino, { type DestinationStream, type Level, type Logger } from 'pino';

export const REDACTED = '[redacted]';

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
];

export interface LoggerOptions {
  level?: Level | 'silent';
  /** Shown as `name` on every line (a component's fallback logger). */
  name?: string;
  /** Where lines go; default stdout. Tests pass a stream to read what was written. */
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const settings = {
    level: options.level ?? 'info',
    ...(options.name === undefined ? {} : { name: options.name }),
    redact: { paths: [...REDACT_PATHS], censor: REDACTED },
  };
  return options.destination === undefined ? pino(settings) : pino(settings, options.destination);
}
